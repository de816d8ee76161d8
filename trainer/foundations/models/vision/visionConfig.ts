import { z } from 'zod';
import { ModelConfigError } from '../modelErrors';

/**
 * The vision-language families (Qwen2-VL, Qwen2.5-VL): `config.json` with a `vision_config`,
 * read as transformers reads it (configuration_qwen2_vl.py and configuration_qwen2_5_vl.py at
 * huggingface/transformers@018c8e0394c47749c55861e11f5f7e2a577973d7). The language model is a
 * Qwen2 decoder (q/k/v biases, no o_proj bias) whose rotary embedding is multimodal (M-RoPE):
 * its frequencies are split into temporal, height and width sections (`mrope_section`).
 *
 * The text fields sit at the top level in the files the Qwen team released, and under
 * `text_config` in files newer transformers versions write; both are read.
 */

export type VisionLanguageFamily = 'qwen2_vl' | 'qwen2_5_vl';

export const VISION_ARCHITECTURES: Record<VisionLanguageFamily, string> = {
  qwen2_vl: 'Qwen2VLForConditionalGeneration',
  qwen2_5_vl: 'Qwen2_5_VLForConditionalGeneration',
};

export function isVisionLanguageType(modelType: unknown): modelType is VisionLanguageFamily {
  return modelType === 'qwen2_vl' || modelType === 'qwen2_5_vl';
}

/** Activations the vision towers use: QuickGELU (Qwen2-VL), SiLU (Qwen2.5-VL), exact GELU. */
export type VisionActivation = 'quick_gelu' | 'silu' | 'gelu';

export interface VisionConfig {
  family: VisionLanguageFamily;
  /** Vision transformer blocks. */
  depth: number;
  /** Width of the vision transformer (`embed_dim` for Qwen2-VL, `hidden_size` for Qwen2.5-VL). */
  width: number;
  numHeads: number;
  headDim: number;
  /** The blocks' MLP width (`embed_dim · mlp_ratio` for Qwen2-VL, `intermediate_size` for Qwen2.5-VL). */
  mlpSize: number;
  act: VisionActivation;
  /** Qwen2-VL: LayerNorm with bias and a fc1/fc2 MLP; Qwen2.5-VL: RMSNorm and a gated (SwiGLU-style) MLP with biases. */
  norm: 'layernorm' | 'rmsnorm';
  /** What the patch merger outputs: the language model's hidden size. */
  outSize: number;
  inChannels: number;
  patchSize: number;
  temporalPatchSize: number;
  spatialMergeSize: number;
  /** Qwen2.5-VL: window attention over windows of this many pixels per side, except in `fullAttentionBlocks`. */
  windowSize: number | undefined;
  /** Blocks that attend to the whole image; every block for Qwen2-VL. */
  fullAttentionBlocks: number[];
  /** Qwen2.5-VL: temporal positions per second of video (images always have temporal position 0). */
  tokensPerSecond: number | undefined;
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
  visionEndTokenId: number;
  /** Where the checkpoint keeps the tower: `visual.` (released files) — newer layouts are renamed on read. */
  prefix: 'visual';
}

const positiveInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();

const Qwen2VisionJson = z.looseObject({
  depth: positiveInt.default(32),
  embed_dim: positiveInt.default(1280),
  hidden_size: positiveInt.default(3584),
  hidden_act: z.string().default('quick_gelu'),
  mlp_ratio: z.number().positive().default(4),
  num_heads: positiveInt.default(16),
  in_channels: positiveInt.optional(),
  in_chans: positiveInt.optional(),
  patch_size: positiveInt.default(14),
  spatial_merge_size: positiveInt.default(2),
  temporal_patch_size: positiveInt.default(2),
});

const Qwen25VisionJson = z.looseObject({
  depth: positiveInt.default(32),
  hidden_size: positiveInt.default(3584),
  hidden_act: z.string().default('silu'),
  intermediate_size: positiveInt.default(3420),
  num_heads: positiveInt.default(16),
  in_channels: positiveInt.optional(),
  in_chans: positiveInt.optional(),
  patch_size: positiveInt.default(14),
  spatial_merge_size: positiveInt.default(2),
  temporal_patch_size: positiveInt.default(2),
  tokens_per_second: z.number().positive().default(4),
  window_size: positiveInt.default(112),
  out_hidden_size: positiveInt.default(3584),
  fullatt_block_indexes: z.array(z.number().int().nonnegative()).default([7, 15, 23, 31]),
});

const VisionLanguageJson = z.looseObject({
  model_type: z.enum(['qwen2_vl', 'qwen2_5_vl']),
  architectures: z.array(z.string()).min(1).optional(),
  vision_config: z.looseObject({}).optional(),
  text_config: z.looseObject({}).optional(),
  image_token_id: tokenId.default(151655),
  video_token_id: tokenId.default(151656),
  vision_start_token_id: tokenId.default(151652),
  vision_end_token_id: tokenId.default(151653),
});

const MropeJson = z.looseObject({ mrope_section: z.array(positiveInt).length(3) });

function issues(error: z.ZodError, prefix: string): string {
  return error.issues
    .map((i) => `${[prefix, ...i.path].filter((p) => p !== '').join('.') || '(root)'}: ${i.message}`)
    .join('; ');
}

/**
 * Parses a Qwen2-VL / Qwen2.5-VL config.json. `parseText` is the text-model parser
 * (parseModelConfig), given the language model's fields as a Qwen2 config.
 */
export function parseVisionLanguageConfig<
  Text extends { headDim: number; hiddenSize: number; numHeads: number; vocabSize: number },
>(
  raw: Record<string, unknown>,
  file: string,
  // Generic over the text config (modelConfig.ts's ModelConfig), which imports this module.
  parseText: (raw: unknown, file: string) => Text,
): Omit<Text, 'family' | 'architecture'> & {
  family: VisionLanguageFamily;
  architecture: string;
  mropeSection: [number, number, number];
  vision: VisionConfig;
} {
  const fail = (message: string): never => {
    throw new ModelConfigError(`${file}: ${message}`);
  };
  const top = VisionLanguageJson.safeParse(raw);
  if (!top.success) return fail(issues(top.error, ''));
  const json = top.data;
  const family = json.model_type;
  const architecture = json.architectures?.[0] ?? VISION_ARCHITECTURES[family];
  if (json.architectures && (json.architectures.length !== 1 || architecture !== VISION_ARCHITECTURES[family])) {
    fail(
      `architectures is ${JSON.stringify(json.architectures)} but model_type "${family}" needs ["${VISION_ARCHITECTURES[family]}"]`,
    );
  }

  // The language model: the text_config object (newer files) or the top-level fields (released files).
  const { vision_config: _vision, text_config: textConfig, ...topLevel } = raw;
  const text: Record<string, unknown> = { ...(textConfig ?? topLevel) };
  const field = textConfig ? 'text_config' : '(top level)';
  const scaling = (text['rope_scaling'] ?? text['rope_parameters']) as Record<string, unknown> | null | undefined;
  const scalingField = text['rope_scaling'] !== undefined ? 'rope_scaling' : 'rope_parameters';
  if (!scaling || typeof scaling !== 'object')
    return fail(
      `${field}: ${scalingField} with mrope_section is required for ${family} (the multimodal rotary sections)`,
    );
  const mrope = MropeJson.safeParse(scaling);
  if (!mrope.success) return fail(issues(mrope.error, scalingField));
  const ropeType = (scaling['rope_type'] ?? scaling['type'] ?? 'default') as string;
  if (ropeType !== 'mrope' && ropeType !== 'default')
    fail(`${scalingField}.type is "${ropeType}"; supported: "mrope" (or "default" with mrope_section)`);
  // transformers' Qwen2-VL text config defaults, which differ from Qwen2's.
  text['model_type'] = 'qwen2';
  delete text['architectures'];
  text['rms_norm_eps'] ??= 1e-5;
  text['rope_theta'] ??= (scaling['rope_theta'] as number | undefined) ?? 1000000;
  delete text['rope_scaling'];
  delete text['rope_parameters'];
  // Qwen2-VL's attention uses hidden_size / num_attention_heads as the head dimension.
  delete text['head_dim'];
  const base = parseText(text, file);
  const section = mrope.data.mrope_section as [number, number, number];
  const half = base.headDim / 2;
  if (section[0] + section[1] + section[2] !== half) {
    fail(
      `${scalingField}.mrope_section ${JSON.stringify(section)} must add up to head_dim / 2 = ${half} (hidden_size ${base.hiddenSize} / num_attention_heads ${base.numHeads} / 2)`,
    );
  }

  const visionRaw = json.vision_config ?? {};
  const vision = family === 'qwen2_vl' ? qwen2Vision(visionRaw, fail) : qwen25Vision(visionRaw, fail);
  const ids = {
    imageTokenId: json.image_token_id,
    videoTokenId: json.video_token_id,
    visionStartTokenId: json.vision_start_token_id,
    visionEndTokenId: json.vision_end_token_id,
  };
  if (vision.outSize !== base.hiddenSize) {
    fail(
      `vision_config.${family === 'qwen2_vl' ? 'hidden_size' : 'out_hidden_size'} (${vision.outSize}) must equal the language model's hidden_size (${base.hiddenSize}): the merger's output replaces token embeddings`,
    );
  }
  for (const [name, id] of Object.entries(ids))
    if (id >= base.vocabSize)
      fail(
        `${name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)} ${id} is outside the vocabulary (vocab_size ${base.vocabSize})`,
      );
  return {
    ...base,
    family,
    architecture,
    mropeSection: section,
    vision: { family, ...vision, ...ids, prefix: 'visual' },
  };
}

type VisionShape = Omit<
  VisionConfig,
  'family' | 'imageTokenId' | 'videoTokenId' | 'visionStartTokenId' | 'visionEndTokenId' | 'prefix'
>;

function activation(value: string, fail: (m: string) => never): VisionActivation {
  if (value === 'quick_gelu' || value === 'silu' || value === 'gelu') return value;
  return fail(
    `vision_config.hidden_act is "${value}", which is not supported; supported: "quick_gelu", "silu", "gelu"`,
  );
}

function checkCommon(v: VisionShape, fail: (m: string) => never): VisionShape {
  if (v.width % v.numHeads !== 0)
    fail(`vision_config: the vision width ${v.width} is not divisible by num_heads ${v.numHeads}`);
  if (v.headDim % 4 !== 0)
    fail(
      `vision_config: the vision head dimension ${v.headDim} must be a multiple of 4 (2-D rotary embeddings rotate pairs per axis)`,
    );
  for (const b of v.fullAttentionBlocks)
    if (b >= v.depth) fail(`vision_config.fullatt_block_indexes has ${b}, but depth is ${v.depth}`);
  if (v.windowSize !== undefined && v.windowSize % (v.patchSize * v.spatialMergeSize) !== 0) {
    fail(
      `vision_config.window_size ${v.windowSize} must be a multiple of patch_size × spatial_merge_size (${v.patchSize * v.spatialMergeSize})`,
    );
  }
  return v;
}

function qwen2Vision(raw: Record<string, unknown>, fail: (m: string) => never): VisionShape {
  const parsed = Qwen2VisionJson.safeParse(raw);
  if (!parsed.success) return fail(issues(parsed.error, 'vision_config'));
  const j = parsed.data;
  const mlpSize = Math.trunc(j.embed_dim * j.mlp_ratio);
  return checkCommon(
    {
      depth: j.depth,
      width: j.embed_dim,
      numHeads: j.num_heads,
      headDim: j.embed_dim / j.num_heads,
      mlpSize,
      act: activation(j.hidden_act, fail),
      norm: 'layernorm',
      outSize: j.hidden_size,
      inChannels: j.in_channels ?? j.in_chans ?? 3,
      patchSize: j.patch_size,
      temporalPatchSize: j.temporal_patch_size,
      spatialMergeSize: j.spatial_merge_size,
      windowSize: undefined,
      fullAttentionBlocks: Array.from({ length: j.depth }, (_, i) => i),
      tokensPerSecond: undefined,
    },
    fail,
  );
}

function qwen25Vision(raw: Record<string, unknown>, fail: (m: string) => never): VisionShape {
  const parsed = Qwen25VisionJson.safeParse(raw);
  if (!parsed.success) return fail(issues(parsed.error, 'vision_config'));
  const j = parsed.data;
  return checkCommon(
    {
      depth: j.depth,
      width: j.hidden_size,
      numHeads: j.num_heads,
      headDim: j.hidden_size / j.num_heads,
      mlpSize: j.intermediate_size,
      act: activation(j.hidden_act, fail),
      norm: 'rmsnorm',
      outSize: j.out_hidden_size,
      inChannels: j.in_channels ?? j.in_chans ?? 3,
      patchSize: j.patch_size,
      temporalPatchSize: j.temporal_patch_size,
      spatialMergeSize: j.spatial_merge_size,
      windowSize: j.window_size,
      fullAttentionBlocks: [...new Set(j.fullatt_block_indexes)].sort((a, b) => a - b),
      tokensPerSecond: j.tokens_per_second,
    },
    fail,
  );
}
