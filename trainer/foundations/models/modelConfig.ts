import * as path from 'node:path';
import { z } from 'zod';
import { ModelConfigError } from './modelErrors';
import { readJsonFile } from './files/jsonFile';
import {
  isVisionLanguageType,
  parseVisionLanguageConfig,
  type VisionConfig,
  type VisionLanguageFamily,
} from './vision/visionConfig';

/**
 * A Hugging Face `config.json`, validated per family and normalised into one camelCase
 * `ModelConfig` that the graphs, the weight list and the checkpoint writer share. Defaults for
 * absent fields are the ones the family's `transformers` config class uses, so a folder means
 * the same here as in Python.
 */

export type ModelFamily = 'qwen2' | 'qwen3' | 'llama';

export const ARCHITECTURES: Record<ModelFamily, string> = {
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  llama: 'LlamaForCausalLM',
};
const FAMILIES = Object.keys(ARCHITECTURES) as ModelFamily[];

export type RopeScaling =
  | { type: 'default' }
  /** Position interpolation: every frequency divided by `factor`. */
  | { type: 'linear'; factor: number }
  /** Llama 3.1+: low frequencies divided by `factor`, high ones kept, a smooth ramp between. */
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

export interface ModelConfig {
  /** The text families, or a vision-language one (trainer/foundations/models/vision). */
  family: ModelFamily | VisionLanguageFamily;
  /** `architectures[0]` as written in config.json. */
  architecture: string;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** Bias on q_proj, k_proj and v_proj (always on for Qwen2, `attention_bias` elsewhere). */
  qkvBias: boolean;
  /** Bias on o_proj (`attention_bias` for Qwen3 and Llama, never for Qwen2). */
  oProjBias: boolean;
  /** Bias on gate_proj, up_proj and down_proj (Llama's `mlp_bias`). */
  mlpBias: boolean;
  /** Per-head RMSNorm on queries and keys before the rotary embedding (Qwen3). */
  qkNorm: boolean;
  bosTokenId: number | undefined;
  /** Every end-of-sequence id (`eos_token_id` may be one id or a list). */
  eosTokenIds: number[];
  padTokenId: number | undefined;
  /** The dtype the weights were saved in (`torch_dtype`, or `dtype` in newer files), if stated. */
  torchDtype: string | undefined;
  /** Where this configuration was read from, for error messages further down. */
  configPath: string;
  /**
   * Ids with an embedding row but no token in the model's tokenizer: the padding rows of a
   * vocabulary rounded up (Qwen2.5's 151,936 rows for 151,665 tokens). Never sampled, and masked in
   * scoring alike (logitMask.ts). Set when the model folder is opened with its tokenizer.
   */
  idsWithoutToken?: readonly number[];
  /** Vision-language models: the multimodal rotary sections (temporal, height, width) of head_dim / 2. */
  mropeSection?: readonly [number, number, number];
  /** Vision-language models: the vision tower. */
  vision?: VisionConfig;
}

const positiveInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();

const RopeFields = {
  type: z.string().optional(),
  rope_type: z.string().optional(),
  factor: z.number().positive().optional(),
  low_freq_factor: z.number().positive().optional(),
  high_freq_factor: z.number().positive().optional(),
  original_max_position_embeddings: positiveInt.optional(),
};

/** Fields every supported family shares. Unknown keys pass: real configs carry many we ignore. */
const BaseConfigJson = z.looseObject({
  architectures: z.array(z.string()).min(1).optional(),
  model_type: z.string(),
  vocab_size: positiveInt,
  hidden_size: positiveInt,
  intermediate_size: positiveInt,
  num_hidden_layers: positiveInt,
  num_attention_heads: positiveInt,
  num_key_value_heads: positiveInt.nullable().optional(),
  head_dim: positiveInt.nullable().optional(),
  hidden_act: z.string().optional(),
  rms_norm_eps: z.number().positive().optional(),
  rope_theta: z.number().positive().optional(),
  rope_scaling: z.looseObject(RopeFields).nullable().optional(),
  /** transformers 5 moves rope_theta and the scaling into one object. */
  rope_parameters: z
    .looseObject({ ...RopeFields, rope_theta: z.number().positive().optional() })
    .nullable()
    .optional(),
  partial_rotary_factor: z.number().optional(),
  max_position_embeddings: positiveInt.optional(),
  tie_word_embeddings: z.boolean().optional(),
  attention_dropout: z.number().optional(),
  layer_types: z.array(z.string()).optional(),
  bos_token_id: tokenId.nullable().optional(),
  eos_token_id: z
    .union([tokenId, z.array(tokenId)])
    .nullable()
    .optional(),
  pad_token_id: tokenId.nullable().optional(),
  torch_dtype: z.string().nullable().optional(),
  dtype: z.string().nullable().optional(),
  quantization_config: z.unknown().optional(),
});
type BaseConfigJson = z.infer<typeof BaseConfigJson>;

const SlidingWindowFields = {
  use_sliding_window: z.boolean().optional(),
  sliding_window: z.number().nullable().optional(),
};

const Qwen2ConfigJson = BaseConfigJson.extend({ ...SlidingWindowFields });
const Qwen3ConfigJson = BaseConfigJson.extend({ ...SlidingWindowFields, attention_bias: z.boolean().optional() });
const LlamaConfigJson = BaseConfigJson.extend({
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
  /** SmolLM2 writes `rope_interleaved: false`; interleaved (GPT-J style) rotary is another layout. */
  rope_interleaved: z.boolean().optional(),
});

const FAMILY_SCHEMAS = { qwen2: Qwen2ConfigJson, qwen3: Qwen3ConfigJson, llama: LlamaConfigJson } as const;

/** The family config classes' defaults for fields a config.json may leave out. */
const FAMILY_DEFAULTS: Record<ModelFamily, { rmsNormEps: number; maxPositionEmbeddings: number; headDim?: number }> = {
  qwen2: { rmsNormEps: 1e-6, maxPositionEmbeddings: 32768 },
  qwen3: { rmsNormEps: 1e-6, maxPositionEmbeddings: 32768, headDim: 128 },
  llama: { rmsNormEps: 1e-6, maxPositionEmbeddings: 2048 },
};
const DEFAULT_ROPE_THETA = 10000;

function list(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

/** Reads and validates `<dir>/config.json`. */
export function loadModelConfig(dir: string): ModelConfig {
  const file = path.join(dir, 'config.json');
  const raw = readJsonFile(file, z.looseObject({}), (m) => new ModelConfigError(m));
  return parseModelConfig(raw, file);
}

/** Validates an already-parsed config.json object; `file` names it in errors. */
export function parseModelConfig(raw: unknown, file: string): ModelConfig {
  const fail = (message: string): never => {
    throw new ModelConfigError(`${file}: ${message}`);
  };
  const unsupported = (field: string, value: unknown, supported: string): never =>
    fail(`${field} is ${JSON.stringify(value)}, which is not supported; supported: ${supported}`);

  if (typeof raw === 'object' && raw !== null && isVisionLanguageType((raw as { model_type?: unknown }).model_type)) {
    return parseVisionLanguageConfig(raw as Record<string, unknown>, file, parseModelConfig);
  }
  const base = BaseConfigJson.safeParse(raw);
  if (!base.success) fail(base.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  const family = familyOf(base.data!, unsupported, fail);
  const parsed = FAMILY_SCHEMAS[family].safeParse(raw);
  if (!parsed.success) fail(parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  const json = parsed.data as FamilyConfigJson;

  checkSupportedFeatures(json, unsupported, fail);

  const numHeads = json.num_attention_heads;
  const numKvHeads = json.num_key_value_heads ?? numHeads;
  if (numHeads % numKvHeads !== 0) {
    fail(
      `num_attention_heads (${numHeads}) must be a multiple of num_key_value_heads (${numKvHeads}) for grouped-query attention`,
    );
  }
  const defaults = FAMILY_DEFAULTS[family];
  let headDim = json.head_dim ?? defaults.headDim;
  if (headDim === undefined) {
    if (json.hidden_size % numHeads !== 0) {
      fail(
        `hidden_size (${json.hidden_size}) is not divisible by num_attention_heads (${numHeads}) and head_dim is not set`,
      );
    }
    headDim = json.hidden_size / numHeads;
  }
  if (headDim % 2 !== 0) fail(`head_dim is ${headDim}: rotary embeddings need an even head dimension`);

  const { ropeTheta, ropeScaling } = parseRope(json, unsupported, fail);
  const attentionBias = json.attention_bias ?? false;
  const eos = json.eos_token_id;
  const dtype = json.torch_dtype ?? json.dtype ?? undefined;

  return {
    family,
    architecture: json.architectures?.[0] ?? ARCHITECTURES[family],
    vocabSize: json.vocab_size,
    hiddenSize: json.hidden_size,
    intermediateSize: json.intermediate_size,
    numLayers: json.num_hidden_layers,
    numHeads,
    numKvHeads,
    headDim,
    rmsNormEps: json.rms_norm_eps ?? defaults.rmsNormEps,
    ropeTheta,
    ropeScaling,
    maxPositionEmbeddings: json.max_position_embeddings ?? defaults.maxPositionEmbeddings,
    tieWordEmbeddings: json.tie_word_embeddings ?? false,
    qkvBias: family === 'qwen2' ? true : attentionBias,
    oProjBias: family === 'qwen2' ? false : attentionBias,
    mlpBias: family === 'llama' ? (json.mlp_bias ?? false) : false,
    qkNorm: family === 'qwen3',
    bosTokenId: json.bos_token_id ?? undefined,
    eosTokenIds: eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos : [eos],
    padTokenId: json.pad_token_id ?? undefined,
    torchDtype: dtype,
    configPath: file,
  };
}

/** A text model's config.json after its family's schema. */
type FamilyConfigJson = z.infer<typeof LlamaConfigJson> & z.infer<typeof Qwen2ConfigJson>;

/** Fails on what the config asks for that the graphs do not implement (quantization, sliding windows, other activations). */
function checkSupportedFeatures(
  json: FamilyConfigJson,
  unsupported: (f: string, v: unknown, s: string) => never,
  fail: (m: string) => never,
): void {
  if (json.quantization_config !== undefined && json.quantization_config !== null) {
    fail(
      "quantization_config is set: checkpoints quantized by other tools (GPTQ, AWQ, bitsandbytes) are not read; use the float32, float16 or bfloat16 weights, and a config's model.quantize ('int4' or 'int8') to train over them quantized",
    );
  }
  const hiddenAct = json.hidden_act ?? 'silu';
  if (hiddenAct !== 'silu') unsupported('hidden_act', hiddenAct, '"silu"');
  if (json.attention_dropout !== undefined && json.attention_dropout !== 0)
    unsupported('attention_dropout', json.attention_dropout, '0');
  if (json.use_sliding_window === true)
    unsupported(
      'use_sliding_window',
      true,
      'false (sliding-window attention is not implemented; every layer attends to the whole sequence)',
    );
  const slidingLayers = (json.layer_types ?? []).filter((t) => t !== 'full_attention');
  if (slidingLayers.length > 0) unsupported('layer_types', slidingLayers[0], '"full_attention" for every layer');
  if (json.rope_interleaved === true)
    unsupported('rope_interleaved', true, 'false (rotary embeddings on split halves, as transformers does)');
  const partial = json.partial_rotary_factor ?? json.rope_parameters?.['partial_rotary_factor'];
  if (partial !== undefined && partial !== 1) unsupported('partial_rotary_factor', partial, '1');
}

function familyOf(
  json: BaseConfigJson,
  unsupported: (f: string, v: unknown, s: string) => never,
  fail: (m: string) => never,
): ModelFamily {
  if (!FAMILIES.includes(json.model_type as ModelFamily))
    unsupported('model_type', json.model_type, list([...FAMILIES, 'qwen2_vl', 'qwen2_5_vl']));
  const family = json.model_type as ModelFamily;
  const architectures = json.architectures;
  if (architectures) {
    if (architectures.length !== 1)
      unsupported('architectures', architectures, 'exactly one of ' + list(Object.values(ARCHITECTURES)));
    const architecture = architectures[0]!;
    if (!Object.values(ARCHITECTURES).includes(architecture))
      unsupported('architectures[0]', architecture, list(Object.values(ARCHITECTURES)));
    if (architecture !== ARCHITECTURES[family]) {
      fail(
        `architectures[0] is "${architecture}" but model_type is "${family}", whose architecture is "${ARCHITECTURES[family]}"`,
      );
    }
  }
  return family;
}

type RopeJson = {
  type?: string | undefined;
  rope_type?: string | undefined;
  factor?: number | undefined;
  low_freq_factor?: number | undefined;
  high_freq_factor?: number | undefined;
  original_max_position_embeddings?: number | undefined;
};

function parseRope(
  json: BaseConfigJson,
  unsupported: (f: string, v: unknown, s: string) => never,
  fail: (m: string) => never,
): { ropeTheta: number; ropeScaling: RopeScaling } {
  const parameters = json.rope_parameters ?? undefined;
  const field = parameters ? 'rope_parameters' : 'rope_scaling';
  const scaling: RopeJson | undefined = parameters ?? json.rope_scaling ?? undefined;
  const ropeTheta = parameters?.rope_theta ?? json.rope_theta ?? DEFAULT_ROPE_THETA;
  if (!scaling) return { ropeTheta, ropeScaling: { type: 'default' } };
  const type = scaling.rope_type ?? scaling.type ?? 'default';
  const need = (key: keyof RopeJson): number => {
    const value = scaling[key];
    if (typeof value !== 'number') fail(`${field}.${key} is required for rope type "${type}"`);
    return value as number;
  };
  switch (type) {
    case 'default':
      return { ropeTheta, ropeScaling: { type: 'default' } };
    case 'linear':
      return { ropeTheta, ropeScaling: { type: 'linear', factor: need('factor') } };
    case 'llama3': {
      const ropeScaling: RopeScaling = {
        type: 'llama3',
        factor: need('factor'),
        lowFreqFactor: need('low_freq_factor'),
        highFreqFactor: need('high_freq_factor'),
        originalMaxPositionEmbeddings: need('original_max_position_embeddings'),
      };
      if (ropeScaling.highFreqFactor <= ropeScaling.lowFreqFactor) {
        fail(
          `${field}.high_freq_factor (${ropeScaling.highFreqFactor}) must be greater than low_freq_factor (${ropeScaling.lowFreqFactor})`,
        );
      }
      return { ropeTheta, ropeScaling };
    }
    default:
      return unsupported(`${field}.rope_type`, type, '"default", "linear", "llama3"');
  }
}

/**
 * The rotary embedding's inverse frequencies, one per pair of head dimensions:
 * θ^(-2i/d) for i in [0, d/2), then the config's scaling. Same formulas as transformers'
 * `ROPE_INIT_FUNCTIONS` (default, linear, llama3), in float64; the graph builder rounds.
 */
export function ropeInverseFrequencies(
  config: Pick<ModelConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>,
): Float64Array {
  const half = config.headDim / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / Math.pow(config.ropeTheta, (2 * i) / config.headDim);
  const scaling = config.ropeScaling;
  if (scaling.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i]! /= scaling.factor;
  } else if (scaling.type === 'llama3') {
    const { factor, lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings: oldContext } = scaling;
    const lowFreqWavelen = oldContext / lowFreqFactor;
    const highFreqWavelen = oldContext / highFreqFactor;
    for (let i = 0; i < half; i++) {
      const freq = inv[i]!;
      const wavelen = (2 * Math.PI) / freq;
      if (wavelen < highFreqWavelen) continue; // high frequency: unchanged
      if (wavelen > lowFreqWavelen) {
        inv[i] = freq / factor; // low frequency: interpolated like linear scaling
      } else {
        const smooth = (oldContext / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
        inv[i] = (1 - smooth) * (freq / factor) + smooth * freq;
      }
    }
  }
  return inv;
}
