import * as fs from 'node:fs';
import { encodedBytes, encodeTensor, type GgmlType } from './encode';

/**
 * The GGUF container (version 3), as llama.cpp's gguf spec and gguf-py define it:
 *
 *   header    magic "GGUF", version u32, tensor count u64, metadata count u64
 *   metadata  key (u64 length + UTF-8), value type u32, value
 *   tensors   name, n_dims u32, dims u64[n_dims] (innermost first), ggml type u32, offset u64
 *   padding   to `general.alignment` (32)
 *   data      each tensor at its offset (relative to the data start), each padded to the alignment
 *
 * Everything little-endian. Tensor data is produced one tensor at a time while writing, so a
 * model larger than memory can be exported.
 */

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_ALIGNMENT = 32;

/** gguf value types (gguf-py's GGUFValueType). */
const VALUE_TYPE = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type MetadataValue =
  | { type: 'uint32'; value: number }
  | { type: 'int32'; value: number }
  | { type: 'float32'; value: number }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  | { type: 'array'; of: 'string'; values: readonly string[] }
  | { type: 'array'; of: 'int32'; values: ArrayLike<number> }
  | { type: 'array'; of: 'float32'; values: ArrayLike<number> };

export const meta = {
  u32: (value: number): MetadataValue => ({ type: 'uint32', value }),
  i32: (value: number): MetadataValue => ({ type: 'int32', value }),
  f32: (value: number): MetadataValue => ({ type: 'float32', value }),
  bool: (value: boolean): MetadataValue => ({ type: 'bool', value }),
  str: (value: string): MetadataValue => ({ type: 'string', value }),
  strings: (values: readonly string[]): MetadataValue => ({ type: 'array', of: 'string', values }),
  i32s: (values: ArrayLike<number>): MetadataValue => ({ type: 'array', of: 'int32', values }),
};

export interface GgufTensor {
  name: string;
  /** Row-major shape as PyTorch writes it ([out, in] for a linear weight). */
  shape: readonly number[];
  type: GgmlType;
  /** The float32 values, produced when the tensor is written (so only one is in memory at a time). */
  values: () => Float32Array;
}

/** Appends little-endian values to a growing buffer (the header, metadata and tensor table). */
class ByteSink {
  private buffer = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const next = Buffer.alloc(Math.max(this.buffer.length * 2, this.length + n));
    this.buffer.copy(next, 0, 0, this.length);
    this.buffer = next;
  }
  u32(v: number): void {
    this.reserve(4);
    this.buffer.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.reserve(4);
    this.buffer.writeInt32LE(v, this.length);
    this.length += 4;
  }
  u64(v: number): void {
    this.reserve(8);
    this.buffer.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  f32(v: number): void {
    this.reserve(4);
    this.buffer.writeFloatLE(v, this.length);
    this.length += 4;
  }
  u8(v: number): void {
    this.reserve(1);
    this.buffer[this.length++] = v;
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.reserve(bytes.length);
    bytes.copy(this.buffer, this.length);
    this.length += bytes.length;
  }
  pad(alignment: number): void {
    const target = Math.ceil(this.length / alignment) * alignment;
    this.reserve(target - this.length);
    this.buffer.fill(0, this.length, target);
    this.length = target;
  }
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

function writeValue(sink: ByteSink, value: MetadataValue): void {
  sink.u32(VALUE_TYPE[value.type]);
  switch (value.type) {
    case 'uint32':
      return sink.u32(value.value);
    case 'int32':
      return sink.i32(value.value);
    case 'float32':
      return sink.f32(value.value);
    case 'bool':
      return sink.u8(value.value ? 1 : 0);
    case 'string':
      return sink.string(value.value);
    case 'array': {
      sink.u32(VALUE_TYPE[value.of]);
      sink.u64(value.values.length);
      if (value.of === 'string') for (const s of value.values) sink.string(s);
      else if (value.of === 'int32') for (let i = 0; i < value.values.length; i++) sink.i32(value.values[i]);
      else for (let i = 0; i < value.values.length; i++) sink.f32(value.values[i]);
    }
  }
}

function checkTensor(t: GgufTensor): void {
  if (t.shape.length < 1 || t.shape.length > 4 || t.shape.some((d) => !Number.isInteger(d) || d < 1)) {
    throw new Error(`GGUF tensor ${t.name}: shape [${t.shape.join(', ')}] is not 1 to 4 positive dimensions`);
  }
}

/**
 * Write a GGUF file: `metadata` in the given order, then `tensors`. Returns the file's size.
 * Written to `file.partial` and renamed when complete, so a failure never leaves half a model.
 */
export function writeGguf(
  file: string,
  metadata: ReadonlyArray<[string, MetadataValue]>,
  tensors: readonly GgufTensor[],
): number {
  const keys = new Set<string>();
  for (const [key] of metadata) {
    if (keys.has(key)) throw new Error(`GGUF metadata key ${key} is given twice`);
    keys.add(key);
  }
  const names = new Set<string>();
  for (const t of tensors) {
    checkTensor(t);
    if (names.has(t.name)) throw new Error(`GGUF tensor ${t.name} is given twice`);
    names.add(t.name);
  }
  const head = new ByteSink();
  head.u32(GGUF_MAGIC);
  head.u32(GGUF_VERSION);
  head.u64(tensors.length);
  head.u64(metadata.length);
  for (const [key, value] of metadata) {
    head.string(key);
    writeValue(head, value);
  }
  let offset = 0;
  for (const t of tensors) {
    head.string(t.name);
    head.u32(t.shape.length);
    // ggml's ne[0] is the innermost (contiguous) dimension: PyTorch's shape reversed.
    for (let i = t.shape.length - 1; i >= 0; i--) head.u64(t.shape[i]);
    head.u32(GGML_TYPE_ID[t.type]);
    head.u64(offset);
    offset += Math.ceil(encodedBytes(t.type, t.shape) / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
  }
  head.pad(GGUF_ALIGNMENT);
  const partial = `${file}.partial`;
  const fd = fs.openSync(partial, 'w');
  try {
    writeAll(fd, head.bytes());
    const zeros = new Uint8Array(GGUF_ALIGNMENT);
    for (const t of tensors) {
      const bytes = encodeTensor(t.type, t.shape, t.values(), t.name);
      writeAll(fd, bytes);
      const padding = Math.ceil(bytes.length / GGUF_ALIGNMENT) * GGUF_ALIGNMENT - bytes.length;
      if (padding) writeAll(fd, zeros.subarray(0, padding));
    }
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(partial, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  fs.renameSync(partial, file);
  return head.length + offset;
}

/** ggml type ids (ggml.h's enum ggml_type). */
export const GGML_TYPE_ID: Record<GgmlType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 8 };

/** fs.writeSync writes at most 2 GiB at a time, and may write less than asked. */
function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length;)
    done += fs.writeSync(fd, bytes, done, Math.min(1 << 30, bytes.length - done));
}
