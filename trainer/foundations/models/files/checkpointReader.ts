import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { CheckpointError } from '../modelErrors';
import { readJsonFile } from './jsonFile';
import { SafetensorsFile, type SafetensorsDtype } from './safetensors';

/**
 * The weights of a Hugging Face model folder: `model.safetensors`, or shards listed by
 * `model.safetensors.index.json`. Every shard's header is read and validated when the
 * checkpoint is opened; tensors are read one at a time, on request.
 */

const CheckpointIndexJson = z.looseObject({
  metadata: z.looseObject({ total_size: z.number().nonnegative().optional() }).optional(),
  weight_map: z.record(z.string(), z.string()),
});

export interface CheckpointTensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** The file that holds it. */
  file: string;
}

export class CheckpointReader {
  private constructor(
    readonly dir: string,
    /** The files the weights come from, in order. */
    readonly files: string[],
    private readonly shards: SafetensorsFile[],
    private readonly owner: Map<string, SafetensorsFile>,
    /** Names as the files store them, for names this reader shows renamed (see `renamed`). */
    private readonly stored: ReadonlyMap<string, string> = new Map(),
  ) {}

  /**
   * The same checkpoint with its tensors under other names (`rename(stored)` → the name to
   * use), e.g. a newer transformers layout read under the released one. Names must stay unique.
   */
  renamed(rename: (stored: string) => string): CheckpointReader {
    const owner = new Map<string, SafetensorsFile>();
    const stored = new Map<string, string>();
    for (const [name, file] of this.owner) {
      const original = this.stored.get(name) ?? name;
      const shown = rename(original);
      if (owner.has(shown))
        throw new CheckpointError(
          `${file.file}: tensors "${stored.get(shown) ?? shown}" and "${original}" both mean "${shown}"`,
        );
      owner.set(shown, file);
      if (shown !== original) stored.set(shown, original);
    }
    return new CheckpointReader(this.dir, this.files, this.shards, owner, stored);
  }

  /**
   * Opens the checkpoint in `dir`: the single file when there is one (transformers looks for it
   * first), else the shards listed by its index.
   */
  static open(dir: string, fileName = 'model.safetensors'): CheckpointReader {
    const single = path.join(dir, fileName);
    const indexFile = `${single}.index.json`;
    if (fs.existsSync(single)) {
      const file = SafetensorsFile.open(single);
      return new CheckpointReader(
        dir,
        [single],
        [file],
        new Map([...file.header.tensors.keys()].map((n) => [n, file])),
      );
    }
    if (fs.existsSync(indexFile)) return CheckpointReader.openSharded(dir, indexFile);
    if (!fs.existsSync(dir)) throw new CheckpointError(`${dir}: model folder not found`);
    const present = fs.readdirSync(dir).filter((f) => /\.(bin|pt|pth|safetensors|gguf|h5|msgpack)$/.test(f));
    const hint = present.some((f) => /\.(bin|pt|pth)$/.test(f))
      ? ` (found ${present.join(', ')}: PyTorch pickles are not read; convert them to safetensors, e.g. save_pretrained(..., safe_serialization=True))`
      : present.length > 0
        ? ` (found ${present.join(', ')})`
        : '';
    throw new CheckpointError(`${dir}: no ${fileName} or ${path.basename(indexFile)}${hint}`);
  }

  private static openSharded(dir: string, indexFile: string): CheckpointReader {
    const index = readJsonFile(indexFile, CheckpointIndexJson, (m) => new CheckpointError(m));
    const shardNames = [...new Set(Object.values(index.weight_map))];
    if (shardNames.length === 0) throw new CheckpointError(`${indexFile}: weight_map is empty`);
    const shards: SafetensorsFile[] = [];
    const owner = new Map<string, SafetensorsFile>();
    try {
      for (const shardName of shardNames) {
        const shardPath = path.join(dir, shardName);
        if (path.dirname(path.resolve(shardPath)) !== path.resolve(dir)) {
          throw new CheckpointError(`${indexFile}: shard "${shardName}" is not a file name inside the model folder`);
        }
        if (!fs.existsSync(shardPath)) {
          const listed = Object.entries(index.weight_map).find(([, f]) => f === shardName)![0];
          throw new CheckpointError(
            `${shardPath}: file not found (the index lists it for tensor "${listed}" and others)`,
          );
        }
        const shard = SafetensorsFile.open(shardPath);
        shards.push(shard);
        for (const name of shard.header.tensors.keys()) {
          const other = owner.get(name);
          if (other) throw new CheckpointError(`${shardPath}: tensor "${name}" is also in ${other.file}`);
          if (index.weight_map[name] !== shardName) {
            throw new CheckpointError(
              `${shardPath}: holds tensor "${name}", which ${indexFile} ${name in index.weight_map ? `places in ${index.weight_map[name]}` : 'does not list'} (the index is out of date)`,
            );
          }
          owner.set(name, shard);
        }
      }
      for (const [name, shardName] of Object.entries(index.weight_map)) {
        if (!owner.has(name))
          throw new CheckpointError(
            `${path.join(dir, shardName)}: has no tensor "${name}", which ${indexFile} places there`,
          );
      }
    } catch (error) {
      for (const shard of shards) shard.close();
      throw error;
    }
    return new CheckpointReader(
      dir,
      shards.map((s) => s.file),
      shards,
      owner,
    );
  }

  /** Every tensor name, sorted. */
  names(): string[] {
    return [...this.owner.keys()].sort();
  }

  has(name: string): boolean {
    return this.owner.has(name);
  }

  info(name: string): CheckpointTensorInfo {
    const file = this.fileOf(name);
    const { dtype, shape } = file.info(this.stored.get(name) ?? name);
    return { name, dtype, shape, file: file.file };
  }

  /**
   * The tensor as float32. With `expectedShape` (from the model config), a tensor of another
   * shape fails naming the file, the tensor and both shapes.
   */
  read(name: string, expectedShape?: readonly number[]): Float32Array {
    const file = this.fileOf(name);
    const storedName = this.stored.get(name) ?? name;
    if (expectedShape) {
      const { shape } = file.info(storedName);
      if (shape.length !== expectedShape.length || shape.some((d, i) => d !== expectedShape[i])) {
        throw new CheckpointError(
          `${file.file}: tensor "${name}" has shape [${shape.join(', ')}] but the model config needs [${expectedShape.join(', ')}]`,
        );
      }
    }
    return file.read(storedName);
  }

  close(): void {
    for (const shard of this.shards) shard.close();
  }

  private fileOf(name: string): SafetensorsFile {
    const file = this.owner.get(name);
    if (!file) throw new CheckpointError(`${this.files.length === 1 ? this.files[0] : this.dir}: no tensor "${name}"`);
    return file;
  }
}
