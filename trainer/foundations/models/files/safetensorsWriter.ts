import * as fs from 'node:fs';
import * as path from 'node:path';
import { CheckpointError } from '../modelErrors';
import { narrowToHalves } from './halfFloat';
import { elementCount } from './safetensors';

/**
 * Writing `.safetensors` files the way the reference implementation lays them out (tensors
 * sorted by name, header JSON padded with spaces to 8 bytes, `__metadata__` with
 * `format: "pt"` so `transformers` accepts the file), and sharded checkpoints the way
 * `transformers`' `save_pretrained` names and indexes them.
 *
 * A tensor's data may be a function: it is called when that tensor is written, so a large
 * checkpoint never needs more than one tensor in memory. Data is written in bounded chunks
 * (a single write of more than 2 GiB is refused by Node), to a temporary file that is renamed
 * into place only when complete.
 */

export type SaveDtype = 'float32' | 'bfloat16' | 'float16';

export const SAVE_DTYPES: Record<SaveDtype, { tag: 'F32' | 'BF16' | 'F16'; bytes: number }> = {
  float32: { tag: 'F32', bytes: 4 },
  bfloat16: { tag: 'BF16', bytes: 2 },
  float16: { tag: 'F16', bytes: 2 },
};

export interface WritableTensor {
  name: string;
  shape: readonly number[];
  /** float32 values in row-major order, or a function that produces them when needed. */
  data: Float32Array | (() => Float32Array);
}

export interface WriteOptions {
  dtype?: SaveDtype;
  /** Extra `__metadata__` entries; `format: "pt"` is always present. */
  metadata?: Record<string, string>;
}

/** Elements converted and written per chunk. */
const CHUNK_ELEMENTS = 1 << 20;

function checkTensors(tensors: readonly WritableTensor[], where: string): void {
  const seen = new Set<string>();
  for (const tensor of tensors) {
    if (!tensor.name) throw new CheckpointError(`${where}: a tensor has an empty name`);
    if (seen.has(tensor.name)) throw new CheckpointError(`${where}: tensor "${tensor.name}" is given twice`);
    seen.add(tensor.name);
    if (!tensor.shape.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new CheckpointError(
        `${where}: tensor "${tensor.name}" has shape [${tensor.shape.join(', ')}]; expected non-negative integers`,
      );
    }
  }
}

/** Write all of `bytes`, again after a short write; a device that takes nothing more is an error, not an endless loop. */
function writeAll(fd: number, bytes: Uint8Array, file: string): void {
  let done = 0;
  while (done < bytes.byteLength) {
    const n = fs.writeSync(fd, bytes, done, bytes.byteLength - done);
    if (n <= 0)
      throw Object.assign(
        new Error(`${file}: the device accepted only part of the write and then no more (a full disk?)`),
        { code: 'ENOSPC' },
      );
    done += n;
  }
}

/** Writes one safetensors file. Returns its size in bytes. */
export function writeSafetensors(file: string, tensors: readonly WritableTensor[], options: WriteOptions = {}): number {
  const dtype = SAVE_DTYPES[options.dtype ?? 'float32'];
  if (!dtype)
    throw new CheckpointError(
      `${file}: dtype "${options.dtype}" is not supported; supported: ${Object.keys(SAVE_DTYPES).join(', ')}`,
    );
  checkTensors(tensors, file);
  const ordered = [...tensors].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const header: Record<string, unknown> = { __metadata__: { ...options.metadata, format: 'pt' } };
  let offset = 0;
  for (const tensor of ordered) {
    const bytes = elementCount(tensor.shape) * dtype.bytes;
    header[tensor.name] = { dtype: dtype.tag, shape: [...tensor.shape], data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let headerText = JSON.stringify(header);
  const headerBytesLength = Buffer.byteLength(headerText, 'utf8');
  headerText += ' '.repeat((8 - (headerBytesLength % 8)) % 8);
  const headerBytes = Buffer.from(headerText, 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(headerBytes.byteLength));

  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.partial-${process.pid}`;
  const fd = fs.openSync(temporary, 'w');
  try {
    writeAll(fd, prefix, file);
    writeAll(fd, headerBytes, file);
    for (const tensor of ordered) writeTensorData(fd, tensor, dtype.tag, file);
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(temporary, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  fs.renameSync(temporary, file);
  return 8 + headerBytes.byteLength + offset;
}

function writeTensorData(fd: number, tensor: WritableTensor, tag: 'F32' | 'BF16' | 'F16', file: string): void {
  const data = typeof tensor.data === 'function' ? tensor.data() : tensor.data;
  const count = elementCount(tensor.shape);
  if (!(data instanceof Float32Array) || data.length !== count) {
    const got = data instanceof Float32Array ? `${data.length} values` : `a ${Object.prototype.toString.call(data)}`;
    throw new CheckpointError(
      `${file}: tensor "${tensor.name}" has shape [${tensor.shape.join(', ')}] (${count} values) but its data is ${got}; expected a Float32Array of ${count}`,
    );
  }
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const halves = tag === 'F32' ? undefined : new Uint16Array(Math.min(CHUNK_ELEMENTS, count));
  for (let start = 0; start < count; start += CHUNK_ELEMENTS) {
    const n = Math.min(CHUNK_ELEMENTS, count - start);
    if (!halves) {
      writeAll(fd, new Uint8Array(data.buffer, data.byteOffset + start * 4, n * 4), file);
    } else {
      const target = halves.subarray(0, n);
      narrowToHalves(tag === 'BF16' ? 'bfloat16' : 'float16', bits, start, target);
      writeAll(fd, new Uint8Array(target.buffer, 0, n * 2), file);
    }
  }
}

export interface ShardedWriteOptions extends WriteOptions {
  /** Largest shard in bytes of tensor data; `transformers` defaults to 5 GB. */
  maxShardBytes?: number;
  /** The single-file name; shards become `model-00001-of-00003.safetensors`. */
  fileName?: string;
}

export const DEFAULT_MAX_SHARD_BYTES = 5_000_000_000;

export interface ShardedWriteResult {
  /** The weight files written, in shard order (file names, relative to the folder). */
  files: string[];
  /** The index file name, when sharded. */
  index?: string;
  /** Sum of the tensors' data bytes (the index's `metadata.total_size`). */
  totalSize: number;
}

/**
 * Groups tensors into shards like huggingface_hub's `split_state_dict_into_shards_factory`:
 * in order, a new shard whenever the next tensor would exceed the limit, and a tensor larger
 * than the limit in a shard of its own.
 */
export function planShards(sizes: readonly { name: string; bytes: number }[], maxShardBytes: number): string[][] {
  const shards: string[][] = [];
  let current: string[] = [];
  let currentBytes = 0;
  for (const { name, bytes } of sizes) {
    if (bytes > maxShardBytes) {
      shards.push([name]);
      continue;
    }
    if (currentBytes + bytes > maxShardBytes && current.length > 0) {
      shards.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(name);
    currentBytes += bytes;
  }
  if (current.length > 0) shards.push(current);
  return shards;
}

/**
 * Writes a checkpoint's weights into `dir`: one `model.safetensors`, or shards plus
 * `model.safetensors.index.json` when they exceed `maxShardBytes`. Weight files of an earlier
 * save with the same base name that this save does not produce are removed afterwards, so the
 * folder never mixes two checkpoints.
 */
export function writeShardedSafetensors(
  dir: string,
  tensors: readonly WritableTensor[],
  options: ShardedWriteOptions = {},
): ShardedWriteResult {
  const fileName = options.fileName ?? 'model.safetensors';
  if (!fileName.endsWith('.safetensors'))
    throw new CheckpointError(`${path.join(dir, fileName)}: a weight file name must end with .safetensors`);
  const maxShardBytes = options.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES;
  if (!(maxShardBytes > 0)) throw new CheckpointError(`${dir}: maxShardBytes must be positive, got ${maxShardBytes}`);
  const dtype = SAVE_DTYPES[options.dtype ?? 'float32'];
  if (!dtype)
    throw new CheckpointError(
      `${dir}: dtype "${options.dtype}" is not supported; supported: ${Object.keys(SAVE_DTYPES).join(', ')}`,
    );
  checkTensors(tensors, dir);

  const sizes = tensors.map((t) => ({ name: t.name, bytes: elementCount(t.shape) * dtype.bytes }));
  const totalSize = sizes.reduce((a, s) => a + s.bytes, 0);
  const shards = planShards(sizes, maxShardBytes);
  const base = fileName.slice(0, -'.safetensors'.length);
  const indexName = `${fileName}.index.json`;
  const byName = new Map(tensors.map((t) => [t.name, t]));
  fs.mkdirSync(dir, { recursive: true });

  const files =
    shards.length <= 1
      ? [fileName]
      : shards.map(
          (_, i) =>
            `${base}-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`,
        );
  const keep = new Set([...files, ...(shards.length > 1 ? [indexName] : [])]);

  if (shards.length <= 1) {
    writeSafetensors(path.join(dir, fileName), tensors, options);
    removeStaleWeights(dir, base, keep, fileName, indexName);
    return { files, totalSize };
  }
  const weightMap: Record<string, string> = {};
  shards.forEach((names, i) => {
    writeSafetensors(
      path.join(dir, files[i]!),
      names.map((n) => byName.get(n)!),
      options,
    );
    for (const name of names) weightMap[name] = files[i]!;
  });
  // transformers writes the index with sorted keys and a 2-space indent.
  const sortedMap = Object.fromEntries(
    Object.keys(weightMap)
      .sort()
      .map((k) => [k, weightMap[k]]),
  );
  const index = { metadata: { total_size: totalSize }, weight_map: sortedMap };
  fs.writeFileSync(path.join(dir, indexName), JSON.stringify(index, null, 2) + '\n');
  removeStaleWeights(dir, base, keep, fileName, indexName);
  return { files, index: indexName, totalSize };
}

function removeStaleWeights(dir: string, base: string, keep: Set<string>, fileName: string, indexName: string): void {
  const shardPattern = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d{5}-of-\\d{5}\\.safetensors$`);
  for (const entry of fs.readdirSync(dir)) {
    if (keep.has(entry)) continue;
    if (entry === fileName || entry === indexName || shardPattern.test(entry))
      fs.rmSync(path.join(dir, entry), { force: true });
  }
}
