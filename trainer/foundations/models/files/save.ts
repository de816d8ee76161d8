import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { CheckpointReader } from './checkpointReader';
import type { ModelConfig } from '../modelConfig';
import { TOKENIZER_FILES } from '../text/tokenizer';
import { CheckpointError } from '../modelErrors';
import { readJsonFile } from './jsonFile';
import { LoraConfig, loraModules, loraScale, loraTensorNames, LORA_TARGETS } from '../lora';
import { BlockSize, dequantizeOnHost, quantizeMatrix, type Quantization } from '../quantized/blockQuantize';
import { quantizedLayouts } from '../quantized/quantizedWeights';
import { expectedTensors } from '../weights';
import { writeSafetensors, writeShardedSafetensors, type SaveDtype, type WritableTensor } from './safetensorsWriter';

/**
 * Writing checkpoints in the formats the rest of the ecosystem reads: a full Hugging Face model
 * folder (sharded safetensors, config, tokenizer), a PEFT LoRA adapter folder
 * (adapter_config.json + adapter_model.safetensors), and an adapter merged into the weights.
 */

function copyIfPresent(fromDir: string, toDir: string, names: readonly string[]): void {
  for (const name of names) {
    const source = path.join(fromDir, name);
    if (fs.existsSync(source)) fs.copyFileSync(source, path.join(toDir, name));
  }
}

export interface SaveOptions {
  dtype?: SaveDtype;
  maxShardBytes?: number;
}

/** A full model folder: the source's config, generation config and tokenizer files, and `tensors`. */
export function saveModelFolder(
  outDir: string,
  sourceDir: string,
  tensors: readonly WritableTensor[],
  options: SaveOptions = {},
): string[] {
  fs.mkdirSync(outDir, { recursive: true });
  const { files } = writeShardedSafetensors(outDir, tensors, {
    dtype: options.dtype ?? 'float32',
    ...(options.maxShardBytes ? { maxShardBytes: options.maxShardBytes } : {}),
  });
  // preprocessor_config.json and chat_template.json: a vision-language model's processor files.
  copyIfPresent(sourceDir, outDir, [
    'config.json',
    'generation_config.json',
    ...TOKENIZER_FILES,
    'preprocessor_config.json',
    'chat_template.json',
  ]);
  return files;
}

/**
 * adapter_config.json as PEFT writes it. Every field that changes what the adapter computes is
 * read: supported, or refused with what it would take (a field accepted but ignored would load an
 * adapter that computes something else — rsLoRA's alpha/√r read as alpha/r put log-probs off by
 * 1.2 at r = 4). Dropout only acts in training and is ignored when an adapter is loaded.
 */
const unset = (value: unknown) =>
  value === undefined ||
  value === null ||
  value === false ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && value !== null && Object.keys(value).length === 0);
const AdapterConfigJson = z
  .looseObject({
    peft_type: z.literal('LORA'),
    r: z.number().int().positive(),
    lora_alpha: z.number().positive(),
    lora_dropout: z.number().min(0).default(0),
    target_modules: z.union([z.array(z.string()), z.string()]),
    bias: z
      .literal('none', 'only "none" is supported (the adapter would train biases the model does not have)')
      .default('none'),
    fan_in_fan_out: z.literal(false, 'only false is supported (Conv1D-style weights, GPT-2, are not)').default(false),
    use_rslora: z.boolean().default(false),
    base_model_name_or_path: z.string().nullable().optional(),
  })
  .superRefine((json, ctx) => {
    const refuse = (field: string, why: string) => {
      if (!unset((json as Record<string, unknown>)[field]))
        ctx.addIssue({
          code: 'custom',
          path: [field],
          message: `${JSON.stringify((json as Record<string, unknown>)[field])} is not supported: ${why}`,
        });
    };
    refuse('use_dora', 'DoRA adapters carry a magnitude vector per module');
    refuse('rank_pattern', 'every module must have rank r');
    refuse('alpha_pattern', 'every module must have alpha lora_alpha');
    refuse('layers_to_transform', 'the adapter must cover every layer');
    refuse('layers_pattern', 'the adapter must cover every layer');
    refuse('modules_to_save', 'fully trained extra modules are not loaded');
    refuse('lora_bias', 'LoRA biases on B are not supported');
    refuse('exclude_modules', 'the adapter must cover every targeted module');
    refuse('target_parameters', 'adapters on parameters instead of modules are not supported');
    refuse('megatron_config', 'Megatron-parallel layers are not supported');
    if (typeof json.target_modules === 'string') {
      ctx.addIssue({
        code: 'custom',
        path: ['target_modules'],
        message: `${JSON.stringify(json.target_modules)} is a regular expression in PEFT; only a list of module names is supported (${LORA_TARGETS.join(', ')})`,
      });
    }
  });

export interface LoraAdapter {
  lora: LoraConfig;
  tensors: Record<string, { shape: number[]; data: Float32Array }>;
  /**
   * How the base was quantized while the adapter trained over it (QLoRA), from
   * BASE_QUANTIZATION_FILE: the adapter computes the trained policy over that base, not over the
   * float weights. Absent for an adapter trained over a float base.
   */
  baseQuantization?: Quantization | undefined;
}

/**
 * Next to adapter_config.json in a QLoRA adapter: `{ "bits": 4, "blockSize": 32 }`. A file of its
 * own, because PEFT's adapter_config.json has no such field and older PEFT refuses unknown ones.
 */
export const BASE_QUANTIZATION_FILE = 'base_quantization.json';

const BaseQuantizationJson = z.strictObject({
  bits: z.union([z.literal(4), z.literal(8)]),
  blockSize: BlockSize,
});

/** A PEFT LoRA adapter folder that `PeftModel.from_pretrained(base, dir)` loads. */
export function saveLoraAdapter(
  outDir: string,
  baseModelDir: string,
  adapter: LoraAdapter,
  options: { dtype?: SaveDtype } = {},
): void {
  fs.mkdirSync(outDir, { recursive: true });
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModelDir,
    r: adapter.lora.rank,
    lora_alpha: adapter.lora.alpha,
    lora_dropout: adapter.lora.dropout,
    target_modules: [...adapter.lora.targets],
    use_rslora: adapter.lora.rslora ?? false,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    modules_to_save: null,
  };
  fs.writeFileSync(path.join(outDir, 'adapter_config.json'), JSON.stringify(config, null, 2) + '\n');
  writeSafetensors(
    path.join(outDir, 'adapter_model.safetensors'),
    Object.entries(adapter.tensors).map(([name, t]) => ({ name, shape: t.shape, data: t.data })),
    { dtype: options.dtype ?? 'float32' },
  );
  copyIfPresent(baseModelDir, outDir, TOKENIZER_FILES);
  if (adapter.baseQuantization)
    fs.writeFileSync(
      path.join(outDir, BASE_QUANTIZATION_FILE),
      JSON.stringify({ bits: adapter.baseQuantization.bits, blockSize: adapter.baseQuantization.blockSize }, null, 2) +
        '\n',
    );
}

/** Read a PEFT LoRA adapter folder for `config`, checking every expected tensor is there with its shape. */
export function readLoraAdapter(dir: string, config: ModelConfig): LoraAdapter {
  const file = path.join(dir, 'adapter_config.json');
  const json = readJsonFile(file, AdapterConfigJson, (m) => new CheckpointError(m));
  const targets = typeof json.target_modules === 'string' ? [json.target_modules] : json.target_modules;
  const unsupported = targets.filter((t) => !(LORA_TARGETS as readonly string[]).includes(t));
  if (unsupported.length)
    throw new CheckpointError(
      `${file}: target_modules ${JSON.stringify(unsupported)} are not supported; supported: ${LORA_TARGETS.join(', ')}`,
    );
  const lora = LoraConfig.parse({
    rank: json.r,
    alpha: json.lora_alpha,
    dropout: 0,
    targets,
    ...(json.use_rslora ? { rslora: true } : {}),
  });
  const reader = CheckpointReader.open(dir, 'adapter_model.safetensors');
  try {
    const tensors: LoraAdapter['tensors'] = {};
    for (const m of loraModules(config, lora)) {
      const names = loraTensorNames(m.module);
      for (const [name, shape] of [
        [names.a, [lora.rank, m.inFeatures]],
        [names.b, [m.outFeatures, lora.rank]],
      ] as const) {
        if (!reader.has(name))
          throw new CheckpointError(`${path.join(dir, 'adapter_model.safetensors')}: tensor ${name} is missing`);
        tensors[name] = { shape: [...shape], data: reader.read(name, shape) };
      }
    }
    const quantizationFile = path.join(dir, BASE_QUANTIZATION_FILE);
    const baseQuantization = fs.existsSync(quantizationFile)
      ? readJsonFile(quantizationFile, BaseQuantizationJson, (m) => new CheckpointError(m))
      : undefined;
    return { lora, tensors, baseQuantization };
  } finally {
    reader.close();
  }
}

/**
 * The merged model's weight `name` from its float value in the base folder: for a QLoRA adapter
 * first the value its quantized base stood for (the blocks dequantized), since that is what the
 * adapter trained over; then W + (alpha/rank)·B·A where the adapter touches it. Returns `base`
 * itself when neither applies.
 */
export function mergedAdapterWeight(
  name: string,
  base: Float32Array,
  adapter: LoraAdapter,
  config: ModelConfig,
): Float32Array {
  let values = base;
  const layout = adapter.baseQuantization
    ? quantizedLayouts(expectedTensors(config), adapter.baseQuantization).get(name)
    : undefined;
  if (layout) values = dequantizeOnHost(quantizeMatrix(values, layout.rows, layout.columns, layout));
  return mergeLoraWeight(name, values, adapter, config) ?? values;
}

/** W + (alpha/rank)·B·A for each adapted projection: the merged model's weight for `name`, or undefined if not adapted. */
export function mergeLoraWeight(
  name: string,
  base: Float32Array,
  adapter: LoraAdapter,
  config: ModelConfig,
): Float32Array | undefined {
  const module = loraModules(config, adapter.lora).find((m) => `${m.module}.weight` === name);
  if (!module) return undefined;
  const names = loraTensorNames(module.module);
  const a = adapter.tensors[names.a].data;
  const b = adapter.tensors[names.b].data;
  const r = adapter.lora.rank;
  const scale = loraScale(adapter.lora);
  const merged = Float32Array.from(base);
  for (let o = 0; o < module.outFeatures; o++) {
    for (let k = 0; k < r; k++) {
      const coef = scale * b[o * r + k];
      if (coef === 0) continue;
      const row = o * module.inFeatures;
      const arow = k * module.inFeatures;
      for (let i = 0; i < module.inFeatures; i++) merged[row + i] += coef * a[arow + i];
    }
  }
  return merged;
}
