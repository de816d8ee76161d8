import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { readJsonFile } from '../../../foundations/models/files/jsonFile';
import { exportGguf, GGUF_TYPES, type GgufExportType } from '../../../foundations/models/gguf/ggufExport';
import type { RunRecord } from '../../../contract/protocol/runStore';
import { RunStoreReader } from '../../../contract/runstore/reader';
import { UsageError } from '../usage';

export const exportGgufUsage = `rollout-studio export gguf <run|checkpoint|model> --out FILE [--type f32|f16|q8_0|q4_0] [options]

Writes the model as one GGUF file for llama.cpp, Ollama or LM Studio. The source is
  a run folder (holding run.json)   its newest checkpoint
  a checkpoint folder               a LoRA adapter (merged into its base model first) or full weights
  a Hugging Face model folder       as it is
  --out FILE     the .gguf file to write
  --type T       f32 (default), f16, q8_0 (8-bit blocks, about a quarter of f32's size) or
                 q4_0 (4-bit blocks, about a seventh: the quantization of model.quantize: 'int4')
  --base DIR     the base model of a LoRA checkpoint (default: the run's model, else the
                 adapter's base_model_name_or_path)
  --name NAME    general.name in the file (default: the model folder's name)`;

export interface ExportSource {
  /** The Hugging Face model folder whose config, tokenizer and (base) weights are exported. */
  modelDir: string;
  /** A LoRA adapter to merge, for a LoRA checkpoint. */
  adapterDir?: string;
  /** What the source was, for the summary line. */
  description: string;
}

/** The base model a PEFT adapter names (transformers writes the path it was trained from). */
function adapterBase(file: string): string | undefined {
  const json = readJsonFile(
    file,
    z.looseObject({ base_model_name_or_path: z.string().nullable().optional() }),
    (m) => new UsageError(m),
  );
  return json.base_model_name_or_path ?? undefined;
}

/** The newest complete checkpoint of a run: run.json's lastCheckpoint, else the highest step on disk. */
function newestCheckpoint(reader: RunStoreReader, record: RunRecord): string | undefined {
  if (record.lastCheckpoint && fs.existsSync(path.join(reader.dir, record.lastCheckpoint, 'trainer_state.json')))
    return path.join(reader.dir, record.lastCheckpoint);
  const complete = reader.checkpoints();
  return complete.length ? path.join(reader.dir, complete[complete.length - 1]) : undefined;
}

/** What a `<run|checkpoint|model>` argument means, with an error naming the folder and what was expected. */
export function resolveExportSource(source: string, baseOverride?: string): ExportSource {
  const dir = path.resolve(source);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
    throw new UsageError(`${source}: no such folder (expected a run, a checkpoint or a model folder)`);
  let runBase: string | undefined;
  let checkpoint = dir;
  let description = source;
  if (fs.existsSync(path.join(dir, 'run.json'))) {
    const reader = new RunStoreReader(dir);
    const record = reader.run();
    const newest = newestCheckpoint(reader, record);
    if (!newest)
      throw new UsageError(
        `${source}: the run has no checkpoint yet (output.checkpointEvery in its config sets how often one is written)`,
      );
    checkpoint = newest;
    runBase = record.model.path;
    description = `run ${record.id}, ${path.relative(dir, newest)}`;
  }
  const adapterConfig = path.join(checkpoint, 'adapter_config.json');
  if (fs.existsSync(adapterConfig)) {
    const base = baseOverride ?? runBase ?? adapterBase(adapterConfig);
    if (!base)
      throw new UsageError(`${adapterConfig}: base_model_name_or_path is not set; name the base model with --base DIR`);
    if (!fs.existsSync(path.join(base, 'config.json'))) {
      throw new UsageError(
        `the LoRA checkpoint's base model ${base} (from ${baseOverride ? '--base' : runBase ? 'run.json model.path' : `${adapterConfig} base_model_name_or_path`}) is not a model folder; name it with --base DIR`,
      );
    }
    return { modelDir: base, adapterDir: checkpoint, description: `${description} (LoRA merged into ${base})` };
  }
  if (fs.existsSync(path.join(checkpoint, 'config.json'))) return { modelDir: checkpoint, description };
  throw new UsageError(
    `${checkpoint}: neither a run (run.json), a LoRA checkpoint (adapter_config.json) nor a model folder (config.json)`,
  );
}

export async function exportGgufCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string' },
      type: { type: 'string', default: 'f32' },
      base: { type: 'string' },
      name: { type: 'string' },
    },
    strict: true,
    allowPositionals: true,
  });
  const [format, source, ...extra] = positionals;
  if (format !== 'gguf')
    throw new UsageError(
      format === undefined ? 'export: name the format (gguf)' : `export: unknown format "${format}"; supported: gguf`,
    );
  if (!source) throw new UsageError('export gguf: name the run, checkpoint or model folder to export');
  if (extra.length) throw new UsageError(`export gguf: unexpected arguments ${extra.join(' ')}`);
  if (!values.out) throw new UsageError('export gguf: --out FILE is required');
  if (!(GGUF_TYPES as readonly string[]).includes(values.type!))
    throw new UsageError(`--type: expected one of ${GGUF_TYPES.join(', ')}, got "${values.type}"`);
  const resolved = resolveExportSource(source, values.base);
  const result = exportGguf({
    modelDir: resolved.modelDir,
    adapterDir: resolved.adapterDir,
    out: values.out,
    type: values.type as GgufExportType,
    name: values.name,
  });
  const types = Object.entries(result.types)
    .map(([t, n]) => `${n} ${t}`)
    .join(', ');
  process.stdout.write(
    `wrote ${result.file}: ${(result.bytes / 2 ** 20).toFixed(1)} MiB, ${result.architecture}, ${result.tensors} tensors (${types}), from ${resolved.description}\n`,
  );
  return 0;
}
