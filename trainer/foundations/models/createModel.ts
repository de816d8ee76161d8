import * as fs from 'node:fs';
import * as path from 'node:path';
import { Random } from './random';
import { ARCHITECTURES, loadModelConfig, type ModelConfig, type ModelFamily } from './modelConfig';
import { ModelConfigError } from './modelErrors';
import { writeShardedSafetensors, type ShardedWriteResult } from './files/safetensorsWriter';
import { TOKENIZER_FILES, Tokenizer } from './text/tokenizer';
import { expectedTensors, type ExpectedTensor } from './weights';
import { VISION_TOOL_CHAT_TEMPLATE } from './vision/visionChatTemplate';
import {
  isVisionLanguageType,
  VISION_ARCHITECTURES,
  type VisionConfig,
  type VisionLanguageFamily,
} from './vision/visionConfig';
import { defaultImageProcessor, imageProcessorJson } from './vision/preprocess';

/**
 * A new Hugging Face model folder with seeded random weights, for tests, examples and
 * benchmarks: config.json, model.safetensors, the tokenizer's files and generation_config.json.
 * Weights follow transformers' `_init_weights` (matrices normal(0, 0.02), biases 0, norms 1);
 * `init: 'varied'` also draws biases and norm scales, so a parity test exercises them.
 */

/** The vision tower of a vision-language model (create-model's `--vision-*` options). */
export interface CreateVisionOptions {
  depth: number;
  /** The tower's width (embed_dim / hidden_size). */
  width: number;
  heads: number;
  /** MLP width (Qwen2-VL: width · mlp_ratio; default 2 · width). */
  mlpSize?: number;
  patchSize?: number;
  mergeSize?: number;
  temporalPatchSize?: number;
  /** Qwen2.5-VL: window attention window, in pixels (default 2 merged units). */
  windowSize?: number;
  /** Qwen2.5-VL: blocks with full attention (default: the last). */
  fullAttentionBlocks?: number[];
  /** Image processor limits written to preprocessor_config.json. */
  minPixels?: number;
  maxPixels?: number;
}

export interface CreateModelOptions {
  family: ModelFamily | VisionLanguageFamily;
  /** Vision-language families: the vision tower (default: depth 2, width 32, 4 heads, patch 14). */
  vision?: CreateVisionOptions | undefined;
  /** Vision-language families: mrope_section (default: a quarter of head_dim/2 for time, the rest split between height and width). */
  mropeSection?: [number, number, number] | undefined;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  intermediate: number;
  /** Default hidden / heads. */
  headDim?: number | undefined;
  tieEmbeddings?: boolean | undefined;
  dtype?: 'float32' | 'bfloat16' | undefined;
  seed?: number | undefined;
  /** A folder with tokenizer.json and tokenizer_config.json, or that tokenizer already loaded. */
  tokenizer: string | Tokenizer;
  outDir: string;
  /** Embedding rows; default the tokenizer's size, which this must not be below. */
  vocabSize?: number | undefined;
  /** Round the vocabulary up to a multiple of this (as released models pad theirs). */
  vocabMultiple?: number | undefined;
  maxPositionEmbeddings?: number | undefined;
  ropeTheta?: number | undefined;
  /** `hf`: transformers' initialisation; `varied`: biases normal(0, 0.02), norms 1 + normal(0, 0.1). */
  init?: 'hf' | 'varied' | undefined;
  /** Shard the weights over this many bytes (default: transformers' 5 GB). */
  maxShardBytes?: number | undefined;
  /** Write into a folder that already has files. */
  overwrite?: boolean | undefined;
}

export interface CreatedModel {
  config: ModelConfig;
  parameters: number;
  weights: ShardedWriteResult;
  /** Every file written, relative to the folder. */
  files: string[];
}

const INITIALIZER_RANGE = 0.02;

function requirePositiveInt(name: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value <= 0))
    throw new ModelConfigError(`create-model: ${name} must be a positive integer, got ${value}`);
}

export function createModel(options: CreateModelOptions): CreatedModel {
  const headDim = checkedHeadDim(options);
  const tokenizer = typeof options.tokenizer === 'string' ? Tokenizer.load(options.tokenizer) : options.tokenizer;
  let vocabSize = options.vocabSize ?? tokenizer.vocabSize;
  if (vocabSize < tokenizer.vocabSize) {
    throw new ModelConfigError(
      `create-model: vocabSize ${vocabSize} is smaller than the tokenizer's ${tokenizer.vocabSize} tokens (${path.join(tokenizer.dir, 'tokenizer.json')})`,
    );
  }
  if (options.vocabMultiple) vocabSize = Math.ceil(vocabSize / options.vocabMultiple) * options.vocabMultiple;

  const outDir = options.outDir;
  if (fs.existsSync(outDir) && fs.readdirSync(outDir).length > 0 && !options.overwrite) {
    throw new ModelConfigError(
      `create-model: ${outDir} is not empty; choose an empty folder or overwrite it explicitly`,
    );
  }
  fs.mkdirSync(outDir, { recursive: true });

  const dtype = options.dtype ?? 'float32';
  const configJson = hfConfigJson({ ...options, headDim, vocabSize, dtype, tokenizer });
  fs.writeFileSync(path.join(outDir, 'config.json'), JSON.stringify(configJson, null, 2) + '\n');
  // Read back through the loader: the folder must mean to us what we meant to write.
  const config = loadModelConfig(outDir);

  const tensors = expectedTensors(config);
  const weights = writeShardedSafetensors(outDir, randomWeights(tensors, options.seed ?? 0, options.init ?? 'hf'), {
    dtype,
    ...(options.maxShardBytes !== undefined ? { maxShardBytes: options.maxShardBytes } : {}),
  });

  const copied = copyTokenizerFiles(tokenizer, outDir);
  if (config.vision) {
    writeProcessorFiles(outDir, config.vision, options.vision);
    copied.push('preprocessor_config.json');
    if (!copied.includes('chat_template.jinja')) copied.push('chat_template.jinja');
  }
  writeGenerationConfig(outDir, tokenizer);

  const parameters = tensors.reduce((sum, t) => sum + t.shape.reduce((a, b) => a * b, 1), 0);
  const files = [
    'config.json',
    ...weights.files,
    ...(weights.index ? [weights.index] : []),
    ...copied,
    'generation_config.json',
  ];
  return { config, parameters, weights, files };
}

/** Checks the sizes and the family; returns the head dimension (default hidden / heads). */
function checkedHeadDim(options: CreateModelOptions): number {
  const { family, layers, hidden, heads, kvHeads, intermediate } = options;
  if (!(family in ARCHITECTURES) && !isVisionLanguageType(family)) {
    throw new ModelConfigError(
      `create-model: family "${family}" is not supported; supported: ${[...Object.keys(ARCHITECTURES), ...Object.keys(VISION_ARCHITECTURES)].join(', ')}`,
    );
  }
  for (const [name, value] of Object.entries({
    layers,
    hidden,
    heads,
    kvHeads,
    intermediate,
    headDim: options.headDim,
    vocabSize: options.vocabSize,
    vocabMultiple: options.vocabMultiple,
  })) {
    requirePositiveInt(name, value);
  }
  if (heads % kvHeads !== 0)
    throw new ModelConfigError(`create-model: heads (${heads}) must be a multiple of kvHeads (${kvHeads})`);
  if (options.headDim === undefined && hidden % heads !== 0)
    throw new ModelConfigError(
      `create-model: hidden (${hidden}) must be divisible by heads (${heads}), or give headDim`,
    );
  const headDim = options.headDim ?? hidden / heads;
  if (headDim % 2 !== 0)
    throw new ModelConfigError(`create-model: head dimension ${headDim} must be even (rotary embeddings rotate pairs)`);
  return headDim;
}

/** The tokenizer's files that it has, copied into the folder; returns their names. */
function copyTokenizerFiles(tokenizer: Tokenizer, outDir: string): string[] {
  const copied: string[] = [];
  for (const name of TOKENIZER_FILES) {
    const source = path.join(tokenizer.dir, name);
    if (!fs.existsSync(source)) continue;
    fs.copyFileSync(source, path.join(outDir, name));
    copied.push(name);
  }
  return copied;
}

/** The processor's files: image preprocessing, and a chat template that renders images and tools. */
function writeProcessorFiles(outDir: string, vision: VisionConfig, options: CreateVisionOptions | undefined): void {
  const processor = {
    ...defaultImageProcessor(vision),
    ...(options?.minPixels ? { minPixels: options.minPixels } : {}),
    ...(options?.maxPixels ? { maxPixels: options.maxPixels } : {}),
  };
  const processorClass = vision.family === 'qwen2_vl' ? 'Qwen2VLProcessor' : 'Qwen2_5_VLProcessor';
  fs.writeFileSync(
    path.join(outDir, 'preprocessor_config.json'),
    JSON.stringify(imageProcessorJson(processor, processorClass), null, 2) + '\n',
  );
  fs.writeFileSync(path.join(outDir, 'chat_template.jinja'), VISION_TOOL_CHAT_TEMPLATE);
}

function writeGenerationConfig(outDir: string, tokenizer: Tokenizer): void {
  const generation: Record<string, unknown> = {};
  if (tokenizer.bosTokenId !== undefined) generation['bos_token_id'] = tokenizer.bosTokenId;
  const eos = tokenizer.eosTokenIds;
  if (eos.length > 0) generation['eos_token_id'] = eos.length === 1 ? eos[0] : [...eos];
  if (tokenizer.padTokenId !== undefined) generation['pad_token_id'] = tokenizer.padTokenId;
  fs.writeFileSync(path.join(outDir, 'generation_config.json'), JSON.stringify(generation, null, 2) + '\n');
}

function hfConfigJson(
  o: CreateModelOptions & { headDim: number; vocabSize: number; dtype: string; tokenizer: Tokenizer },
): Record<string, unknown> {
  if (isVisionLanguageType(o.family))
    return visionLanguageConfigJson(
      o as CreateModelOptions & {
        family: VisionLanguageFamily;
        headDim: number;
        vocabSize: number;
        dtype: string;
        tokenizer: Tokenizer;
      },
    );
  const eos = o.tokenizer.eosTokenId;
  const json: Record<string, unknown> = {
    architectures: [ARCHITECTURES[o.family]],
    model_type: o.family,
    vocab_size: o.vocabSize,
    hidden_size: o.hidden,
    intermediate_size: o.intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads,
    head_dim: o.headDim,
    hidden_act: 'silu',
    max_position_embeddings: o.maxPositionEmbeddings ?? 4096,
    rms_norm_eps: 1e-6,
    rope_theta: o.ropeTheta ?? (o.family === 'llama' ? 10000 : 1000000),
    rope_scaling: null,
    initializer_range: INITIALIZER_RANGE,
    tie_word_embeddings: o.tieEmbeddings ?? false,
    attention_dropout: 0,
    bos_token_id: o.tokenizer.bosTokenId ?? null,
    eos_token_id: eos ?? null,
    pad_token_id: o.tokenizer.padTokenId ?? null,
    torch_dtype: o.dtype,
    use_cache: true,
  };
  if (o.family === 'qwen2' || o.family === 'qwen3')
    Object.assign(json, { use_sliding_window: false, sliding_window: null, max_window_layers: o.layers });
  if (o.family === 'qwen3' || o.family === 'llama') json['attention_bias'] = false;
  if (o.family === 'llama') json['mlp_bias'] = false;
  return json;
}

/**
 * A Qwen2-VL / Qwen2.5-VL config.json in the layout the Qwen team released: the language model's
 * fields at the top level with `rope_scaling: {type: "mrope", mrope_section}`, and `vision_config`.
 */
function visionLanguageConfigJson(
  o: CreateModelOptions & {
    family: VisionLanguageFamily;
    headDim: number;
    vocabSize: number;
    dtype: string;
    tokenizer: Tokenizer;
  },
): Record<string, unknown> {
  if (o.headDim !== o.hidden / o.heads)
    throw new ModelConfigError(
      `create-model: ${o.family} uses hidden / heads as the head dimension; --head-dim ${o.headDim} is not ${o.hidden / o.heads}`,
    );
  const half = o.headDim / 2;
  const t = Math.max(1, Math.round(half / 4));
  const section = o.mropeSection ?? [t, Math.floor((half - t) / 2), half - t - Math.floor((half - t) / 2)];
  const v = { depth: 2, width: 32, heads: 4, patchSize: 14, mergeSize: 2, temporalPatchSize: 2, ...o.vision };
  for (const [name, value] of Object.entries(v)) {
    if (typeof value === 'number' && (!Number.isInteger(value) || value <= 0))
      throw new ModelConfigError(`create-model: vision ${name} must be a positive integer, got ${value}`);
  }
  const mlpSize = v.mlpSize ?? 2 * v.width;
  const eos = o.tokenizer.eosTokenId;
  const json: Record<string, unknown> = {
    architectures: [VISION_ARCHITECTURES[o.family]],
    model_type: o.family,
    vocab_size: o.vocabSize,
    hidden_size: o.hidden,
    intermediate_size: o.intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: o.heads,
    num_key_value_heads: o.kvHeads,
    hidden_act: 'silu',
    max_position_embeddings: o.maxPositionEmbeddings ?? 4096,
    rms_norm_eps: 1e-6,
    rope_theta: o.ropeTheta ?? 1000000,
    rope_scaling: { type: 'mrope', mrope_section: section },
    initializer_range: INITIALIZER_RANGE,
    tie_word_embeddings: o.tieEmbeddings ?? false,
    attention_dropout: 0,
    use_sliding_window: false,
    sliding_window: null,
    max_window_layers: o.layers,
    bos_token_id: o.tokenizer.bosTokenId ?? null,
    eos_token_id: eos ?? null,
    pad_token_id: o.tokenizer.padTokenId ?? null,
    torch_dtype: o.dtype,
    use_cache: true,
    image_token_id: o.tokenizer.tokenId('<|image_pad|>'),
    video_token_id: o.tokenizer.tokenId('<|video_pad|>'),
    vision_start_token_id: o.tokenizer.tokenId('<|vision_start|>'),
    vision_end_token_id: o.tokenizer.tokenId('<|vision_end|>'),
  };
  json['vision_config'] = visionTowerConfigJson(o.family, o.hidden, v, mlpSize);
  return json;
}

/** The vision tower's options with create-model's defaults for the patch and merge sizes. */
type VisionTowerOptions = CreateVisionOptions & { patchSize: number; mergeSize: number; temporalPatchSize: number };

/** `vision_config` as each family's release writes it. */
function visionTowerConfigJson(
  family: VisionLanguageFamily,
  hidden: number,
  v: VisionTowerOptions,
  mlpSize: number,
): Record<string, unknown> {
  const common = {
    depth: v.depth,
    num_heads: v.heads,
    in_chans: 3,
    patch_size: v.patchSize,
    spatial_merge_size: v.mergeSize,
    spatial_patch_size: v.patchSize,
    temporal_patch_size: v.temporalPatchSize,
    initializer_range: INITIALIZER_RANGE,
  };
  if (family === 'qwen2_vl') {
    if (mlpSize % v.width !== 0)
      throw new ModelConfigError(
        `create-model: Qwen2-VL's MLP width is width × mlp_ratio; ${mlpSize} is not a multiple of ${v.width}`,
      );
    return {
      ...common,
      embed_dim: v.width,
      hidden_size: hidden,
      mlp_ratio: mlpSize / v.width,
      hidden_act: 'quick_gelu',
    };
  }
  return {
    ...common,
    hidden_size: v.width,
    out_hidden_size: hidden,
    intermediate_size: mlpSize,
    hidden_act: 'silu',
    window_size: v.windowSize ?? 2 * v.patchSize * v.mergeSize,
    fullatt_block_indexes: v.fullAttentionBlocks ?? [v.depth - 1],
    tokens_per_second: 2,
  };
}

/**
 * Each tensor draws from its own stream, seeded from the model seed in the tensors' order, so
 * its values do not depend on the order the writer asks for them in. Values are produced when
 * the writer reaches the tensor: only one tensor is ever in memory.
 */
function randomWeights(tensors: ExpectedTensor[], seed: number, init: 'hf' | 'varied') {
  const seeds = Random.fromSeed(seed);
  return tensors.map((tensor) => {
    const stream = Random.fromSeed(seeds.nextUint32() * 0x200000 + (seeds.nextUint32() >>> 11));
    const count = tensor.shape.reduce((a, b) => a * b, 1);
    const data = () => {
      const values = new Float32Array(count);
      if (tensor.role === 'embedding' || tensor.role === 'linear') stream.fillNormal(values, 0, INITIALIZER_RANGE);
      else if (tensor.role === 'bias') {
        if (init === 'varied') stream.fillNormal(values, 0, INITIALIZER_RANGE);
      } else if (init === 'varied') stream.fillNormal(values, 1, 0.1);
      else values.fill(1);
      return values;
    };
    return { name: tensor.name, shape: tensor.shape, data };
  });
}
