/**
 * A float64 central-difference check through the vision-language model: the scoring graph's
 * log-probs of a batch whose sequences hold images (one image shared by both, as a group's
 * prompt image is), projected onto fixed random weights. With the encoder frozen the gradient
 * reaches the language model's weights and LoRA adapters past the image tokens; trained on
 * request, it reaches every weight of the vision tower (Qwen2-VL's LayerNorm/QuickGELU blocks,
 * Qwen2.5-VL's RMSNorm/SwiGLU blocks with window attention, the patch merger's GELU).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { gradCheck } from '../../helpers/gradcheck';
import * as op from '#trainer/foundations/engine/ops';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { packForScoring } from '#trainer/foundations/models/batch';
import { parseModelConfig, type ModelConfig } from '#trainer/foundations/models/modelConfig';
import { loraModules, loraTensorNames, type LoraConfig } from '#trainer/foundations/models/lora';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { addVisionFeeds, type BatchImage } from '#trainer/foundations/models/vision/visionBatch';
import { isVisionWeight } from '#trainer/foundations/models/vision/visionWeights';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { assertGradients, f64, seeded } from '../../helpers/engine';

function tinyConfig(family: 'qwen2_vl' | 'qwen2_5_vl'): ModelConfig {
  const common = { depth: 2, num_heads: 2, in_chans: 3, patch_size: 2, spatial_merge_size: 2, temporal_patch_size: 2 };
  return parseModelConfig(
    {
      architectures: [family === 'qwen2_vl' ? 'Qwen2VLForConditionalGeneration' : 'Qwen2_5_VLForConditionalGeneration'],
      model_type: family,
      vocab_size: 24,
      hidden_size: 12,
      intermediate_size: 12,
      num_hidden_layers: 2,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      rope_scaling: { type: 'mrope', mrope_section: [1, 1, 1] },
      tie_word_embeddings: false,
      vision_start_token_id: 20,
      vision_end_token_id: 21,
      image_token_id: 22,
      video_token_id: 23,
      vision_config:
        family === 'qwen2_vl'
          ? { ...common, embed_dim: 8, hidden_size: 12, mlp_ratio: 2, hidden_act: 'quick_gelu' }
          : {
              ...common,
              hidden_size: 8,
              out_hidden_size: 12,
              intermediate_size: 12,
              hidden_act: 'silu',
              window_size: 4,
              fullatt_block_indexes: [1],
            },
    },
    `${family}/config.json`,
  );
}

async function check(config: ModelConfig, options: { trainVision: boolean; lora?: LoraConfig }): Promise<void> {
  const r = seeded(config.family.length * 97 + (options.trainVision ? 1 : 0));
  const feeds: Record<string, HostTensor> = {};
  for (const t of expectedTensors(config))
    feeds[t.name] = f64(t.shape, r, t.role === 'norm' ? 0.2 : 0.4, t.role === 'norm' ? 1 : 0);
  if (options.lora) {
    for (const m of loraModules(config, options.lora)) {
      const names = loraTensorNames(m.module);
      feeds[names.a] = f64([options.lora.rank, m.inFeatures], r, 0.3);
      feeds[names.b] = f64([m.outFeatures, options.lora.rank], r, 0.3);
    }
    feeds.lora_scale = { dtype: 'float64', shape: [], data: Float64Array.of(options.lora.alpha / options.lora.rank) };
  }
  // Images: a 4×6 patch grid (2×3 merged units, 6 tokens) and a 4×4 one (4 tokens).
  const patchWidth = 3 * 2 * 2 * 2;
  const image = (key: string, h: number, w: number): BatchImage => ({
    key,
    grid: [1, h, w],
    patches: Float32Array.from(f64([h * w, patchWidth], r).data as Float64Array),
  });
  const wide = image('wide', 4, 6);
  const square = image('square', 4, 4);
  const sequences = [
    // The gradient check samples embedding rows 0, 6, 12 and 18: the texts use those tokens.
    { ids: [3, 20, ...new Array(6).fill(22), 21, 5, 0, 6, 7], images: [wide] },
    {
      ids: [12, 20, ...new Array(6).fill(22), 21, 18, 20, ...new Array(4).fill(22), 21, 11, 4],
      images: [wide, square],
    },
  ];
  const packed = packForScoring(
    sequences.map((s) => s.ids),
    sequences.map((s) => Uint8Array.from(s.ids, (id, t) => (t > 0 && id !== 22 ? 1 : 0))),
  );
  addVisionFeeds(packed, sequences, config.vision!);
  for (const [name, value] of Object.entries(packed.feeds as Record<string, HostTensor>)) {
    feeds[name] =
      value.dtype === 'float32'
        ? { dtype: 'float64', shape: value.shape, data: Float64Array.from(value.data as Float32Array) }
        : value;
  }
  feeds.inv_temperature = { dtype: 'float64', shape: [], data: Float64Array.of(1.1) };
  feeds.projection = f64([2, packed.length], r);
  let names: string[] = [];
  const build = () => {
    const scoring = buildScoringGraph(config, { dtype: 'float64', lora: options.lora, entropy: true }, 'gradcheck');
    const g = scoring.graph;
    const loss = op.reduceSum(
      op.mul(op.add(scoring.logprobs, op.mul(scoring.entropy!, 0.5)), g.input('projection', 'float64', ['B', 'T'])),
    );
    const wrt = [...scoring.weights.used.entries()].filter(([name]) => options.trainVision || !isVisionWeight(name));
    names = wrt.map(([name]) => name);
    return { loss, wrt: wrt.map(([, t]) => t), graph: g };
  };
  const results = await gradCheck(build, feeds, { maxElementsPerTensor: 4, step: 1e-5 });
  assert.equal(
    names.some(isVisionWeight),
    options.trainVision,
    'the vision tower is differentiated exactly when it is trained',
  );
  if (options.lora) assert.ok(names.some((n) => n.includes('lora_A')));
  assertGradients(results);
}

describe('vision-language gradients (float64 finite differences)', () => {
  for (const family of ['qwen2_vl', 'qwen2_5_vl'] as const) {
    it(`${family}: the language model and LoRA adapters, with image tokens present and the encoder frozen`, () =>
      check(tinyConfig(family), {
        trainVision: false,
        lora: { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] },
      }));
    it(`${family}: every weight of the vision tower and the language model, the encoder trained`, () =>
      check(tinyConfig(family), { trainVision: true }));
  }
});
