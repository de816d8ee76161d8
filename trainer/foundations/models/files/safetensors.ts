import * as fs from 'node:fs';
import * as os from 'node:os';
import { z } from 'zod';
import { CheckpointError } from '../modelErrors';
import { widenHalves } from './halfFloat';

/**
 * Reading one `.safetensors` file (https://github.com/huggingface/safetensors, "Format"):
 *
 *   8 bytes   N, little-endian uint64
 *   N bytes   JSON: { "__metadata__"?: {string: string},
 *                     "<tensor>": { "dtype": "F32", "shape": [..], "data_offsets": [begin, end] } }
 *   the rest  tensor data; offsets are relative to the first byte after the header
 *
 * The header is validated the way the reference implementation does (offsets inside the file,
 * contiguous, non-overlapping, sizes = prod(shape) * itemsize) before any tensor is read, and a
 * tensor is read with positioned reads straight into its float32 result: the file is never
 * held in memory, and a 16-bit tensor is widened in bounded chunks.
 */

/** Every dtype the format defines, with its size in bytes. */
export const DTYPE_SIZES = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E5M2: 1,
  F8_E4M3: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
} as const;
export type SafetensorsDtype = keyof typeof DTYPE_SIZES;

/** The dtypes a tensor can be read as float32 from. */
export const READABLE_DTYPES = ['F32', 'F16', 'BF16'] as const satisfies readonly SafetensorsDtype[];

/** The reference implementation refuses larger headers; so do we (a corrupt length reads as huge). */
export const MAX_HEADER_BYTES = 100_000_000;

/** Bytes read per chunk when widening a 16-bit tensor: bounds the extra memory of a read. */
const WIDEN_CHUNK_BYTES = 8 << 20;

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte range in the file, [begin, end). */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  file: string;
  /** `__metadata__`, e.g. { format: 'pt' }. */
  metadata: Record<string, string>;
  tensors: Map<string, TensorInfo>;
  /** Absolute offset of the data section. */
  dataStart: number;
}

const TensorEntryJson = z.strictObject({
  dtype: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
});

export function elementCount(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

function checkLittleEndian(): void {
  if (os.endianness() !== 'LE')
    throw new Error('safetensors data is little-endian; this machine is big-endian, which is not supported');
}

/** Reads exactly `length` bytes at `position` into `target`, or fails naming what was being read. */
export function readExactly(fd: number, target: Uint8Array, position: number, what: () => string): void {
  let done = 0;
  while (done < target.byteLength) {
    const n = fs.readSync(fd, target, done, target.byteLength - done, position + done);
    if (n === 0)
      throw new CheckpointError(
        `${what()}: the file ended after ${done} of ${target.byteLength} bytes (truncated while open?)`,
      );
    done += n;
  }
}

/** Parses and validates the header of an open safetensors file. */
export function readSafetensorsHeader(fd: number, file: string): SafetensorsHeader {
  const fail = (message: string): never => {
    throw new CheckpointError(`${file}: ${message}`);
  };
  const size = fs.fstatSync(fd).size;
  if (size < 8) fail(`truncated: ${size} bytes, shorter than the 8-byte header length`);
  const lengthBytes = new Uint8Array(8);
  readExactly(fd, lengthBytes, 0, () => `${file}: header length`);
  const headerLength = Number(Buffer.from(lengthBytes).readBigUInt64LE(0));
  if (headerLength > MAX_HEADER_BYTES)
    fail(
      `corrupted header: its length field says ${headerLength} bytes (more than the format's ${MAX_HEADER_BYTES}); this is not a safetensors file or its first bytes are damaged`,
    );
  if (8 + headerLength > size)
    fail(`truncated or corrupted: the header length field says ${headerLength} bytes but only ${size - 8} follow it`);
  const headerBytes = new Uint8Array(headerLength);
  readExactly(fd, headerBytes, 8, () => `${file}: header`);
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (error) {
    return fail(`corrupted header: not valid JSON (${(error as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return fail('corrupted header: expected a JSON object of tensors');

  const dataStart = 8 + headerLength;
  let metadata: Record<string, string> = {};
  const tensors = new Map<string, TensorInfo>();
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      const parsed = z.record(z.string(), z.string()).safeParse(value);
      if (!parsed.success) fail('corrupted header: "__metadata__" must map strings to strings');
      metadata = parsed.data!;
      continue;
    }
    const parsed = TensorEntryJson.safeParse(value);
    if (!parsed.success) {
      fail(
        `corrupted header: tensor "${name}": ${parsed.error.issues.map((i) => `${i.path.join('.') || '(entry)'}: ${i.message}`).join('; ')}`,
      );
    }
    const entry = parsed.data!;
    if (!(entry.dtype in DTYPE_SIZES))
      fail(
        `corrupted header: tensor "${name}" has dtype "${entry.dtype}", which the safetensors format does not define`,
      );
    const dtype = entry.dtype as SafetensorsDtype;
    const [begin, end] = entry.data_offsets;
    if (end < begin)
      fail(`corrupted header: tensor "${name}" has data_offsets [${begin}, ${end}] that end before they begin`);
    const expected = elementCount(entry.shape) * DTYPE_SIZES[dtype];
    if (end - begin !== expected) {
      fail(
        `corrupted header: tensor "${name}" has data_offsets [${begin}, ${end}] (${end - begin} bytes) but shape [${entry.shape.join(', ')}] of ${dtype} needs ${expected} bytes`,
      );
    }
    tensors.set(name, { name, dtype, shape: entry.shape, begin: dataStart + begin, end: dataStart + end });
  }

  checkTensorsTileData(tensors, dataStart, size, fail);
  return { file, metadata, tensors, dataStart };
}

/** The tensors must tile the data section exactly: no gaps, no overlaps, nothing missing. */
function checkTensorsTileData(
  tensors: ReadonlyMap<string, TensorInfo>,
  dataStart: number,
  size: number,
  fail: (message: string) => never,
): void {
  const dataBytes = size - dataStart;
  const ordered = [...tensors.values()].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = dataStart;
  let previous: TensorInfo | undefined;
  for (const tensor of ordered) {
    if (tensor.begin < cursor)
      fail(
        `corrupted header: tensor "${tensor.name}" (data_offsets from ${tensor.begin - dataStart}) overlaps tensor "${previous!.name}" (which ends at ${cursor - dataStart})`,
      );
    if (tensor.begin > cursor)
      fail(
        `corrupted header: ${tensor.begin - cursor} bytes before tensor "${tensor.name}" belong to no tensor (data is not contiguous)`,
      );
    if (tensor.end > size) {
      fail(
        `truncated: tensor "${tensor.name}" ends at data byte ${tensor.end - dataStart} but the file holds only ${dataBytes} bytes of data`,
      );
    }
    cursor = tensor.end;
    previous = tensor;
  }
  if (cursor !== size)
    fail(`corrupted: the header accounts for ${cursor - dataStart} bytes of data but the file holds ${dataBytes}`);
}

/** One open safetensors file. Close it when done (it holds a file descriptor). */
export class SafetensorsFile {
  private fd: number | undefined;

  private constructor(
    readonly file: string,
    fd: number,
    readonly header: SafetensorsHeader,
  ) {
    this.fd = fd;
  }

  static open(file: string): SafetensorsFile {
    checkLittleEndian();
    let fd: number;
    try {
      fd = fs.openSync(file, 'r');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new CheckpointError(
        code === 'ENOENT' ? `${file}: file not found` : `${file}: cannot be opened (${(error as Error).message})`,
      );
    }
    try {
      return new SafetensorsFile(file, fd, readSafetensorsHeader(fd, file));
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  info(name: string): TensorInfo {
    const info = this.header.tensors.get(name);
    if (!info) throw new CheckpointError(`${this.file}: no tensor "${name}"`);
    return info;
  }

  /** The tensor's raw bytes as stored (little-endian, its own dtype). */
  readBytes(name: string): Uint8Array {
    const info = this.info(name);
    const bytes = new Uint8Array(info.end - info.begin);
    readExactly(this.openFd(), bytes, info.begin, () => `${this.file}: tensor "${name}"`);
    return bytes;
  }

  /** The tensor as float32 (F16 and BF16 widened exactly). */
  read(name: string): Float32Array {
    const info = this.info(name);
    if (!(READABLE_DTYPES as readonly string[]).includes(info.dtype)) {
      throw new CheckpointError(
        `${this.file}: tensor "${name}" has dtype ${info.dtype}, which is not supported; supported: ${READABLE_DTYPES.join(', ')}`,
      );
    }
    const fd = this.openFd();
    const what = () => `${this.file}: tensor "${name}"`;
    const out = new Float32Array(elementCount(info.shape));
    if (info.dtype === 'F32') {
      readExactly(fd, new Uint8Array(out.buffer), info.begin, what);
      return out;
    }
    const kind = info.dtype === 'BF16' ? 'bfloat16' : 'float16';
    const target = new Uint32Array(out.buffer);
    const chunk = new Uint8Array(Math.min(WIDEN_CHUNK_BYTES, info.end - info.begin));
    for (let position = info.begin; position < info.end; position += chunk.byteLength) {
      const bytes = chunk.subarray(0, Math.min(chunk.byteLength, info.end - position));
      readExactly(fd, bytes, position, what);
      widenHalves(kind, new Uint16Array(bytes.buffer, 0, bytes.byteLength / 2), target, (position - info.begin) / 2);
    }
    return out;
  }

  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd);
    this.fd = undefined;
  }

  private openFd(): number {
    if (this.fd === undefined) throw new Error(`${this.file}: read after close`);
    return this.fd;
  }
}
