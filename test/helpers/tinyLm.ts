/**
 * A tiny decoder LM for engine tests and benchmarks: the real model graph (trainer/foundations/models
 * decoderTrunk, Llama family) with a masked mean next-token NLL on top.
 */
import type { Device } from '#trainer/foundations/engine/device/device';
import { Graph, type Tensor } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { DEFAULT_ADAMW, type AdamWConfig } from '#trainer/foundations/engine/optimizer';
import { OptimizerRuntime } from '#trainer/foundations/engine/optimizerRuntime';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { parseModelConfig, type ModelConfig } from '#trainer/foundations/models/modelConfig';
import { decoderTrunk, lmHeadLogits, WeightInputs } from '#trainer/foundations/models/decoder';
import { linear } from '#trainer/foundations/models/layers/linear';
import { expectedTensors } from '#trainer/foundations/models/weights';

export interface TinyLmConfig {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  ffn: number;
  dtype?: 'float32' | 'float64';
}

export function tinyModelConfig(c: TinyLmConfig): ModelConfig {
  return parseModelConfig(
    {
      architectures: ['LlamaForCausalLM'],
      model_type: 'llama',
      vocab_size: c.vocab,
      hidden_size: c.hidden,
      intermediate_size: c.ffn,
      num_hidden_layers: c.layers,
      num_attention_heads: c.heads,
      num_key_value_heads: c.kvHeads,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      max_position_embeddings: 4096,
      tie_word_embeddings: false,
      hidden_act: 'silu',
    },
    'tiny-lm/config.json',
  );
}

/** The forward graph and its loss; data inputs: ids, targets, positions, key_mask [B, T] int64 and loss_mask [B, T]. */
export function buildTinyLm(c: TinyLmConfig, name = 'tiny_lm'): { graph: Graph; loss: Tensor; params: Tensor[] } {
  const dtype = c.dtype ?? 'float32';
  const config = tinyModelConfig(c);
  const g = new Graph(name);
  const ids = g.input('ids', 'int64', ['B', 'T']);
  const targets = g.input('targets', 'int64', ['B', 'T']);
  const lossMask = g.input('loss_mask', dtype, ['B', 'T']);
  const keyMask = g.input('key_mask', 'int64', ['B', 'T']);
  const positions = g.input('positions', 'int64', ['B', 'T']);
  const weights = new WeightInputs(g, dtype);
  const hidden = decoderTrunk(g, config, weights, { ids, positions, keyMask }, { dtype });
  const logits = g.withScope('lm_head', () => lmHeadLogits(config, weights, hidden, linear));
  const loss = g.withScope('loss', () => {
    // log p(target) = logit(target) − logsumexp(logits), as the trainer's scoring graph computes it:
    // no [B, T, V] log-probability matrix (and its gradient) is materialised.
    const lse = op.reduceLogSumExp(logits, [-1], true);
    const picked = op.squeeze(op.sub(op.gatherElements(logits, op.unsqueeze(targets, [-1]), -1), lse), [-1]);
    return op.neg(op.div(op.reduceSum(op.mul(picked, lossMask)), op.maximum(op.reduceSum(lossMask), 1)));
  });
  return { graph: g, loss, params: expectedTensors(config).map((t) => weights.used.get(t.name)!) };
}

export interface ParameterInit {
  name: string;
  value: HostTensor;
  decay: boolean;
}

/** An OptimizerRuntime training the tiny LM from `init`. */
export function tinyLmOptimizer(
  device: Device,
  config: TinyLmConfig,
  init: ParameterInit[],
  options: { adamw?: AdamWConfig; accumulate?: boolean; optimization?: 'basic' | 'all' } = {},
): Promise<OptimizerRuntime> {
  return OptimizerRuntime.create(device, {
    build: () => {
      const { graph, loss, params } = buildTinyLm(config);
      return { graph, loss, params: params.map((tensor, i) => ({ tensor, decay: init[i].decay })) };
    },
    adamw: options.adamw ?? DEFAULT_ADAMW,
    initial: Object.fromEntries(init.map((p) => [p.name, p.value])),
    resident: [],
    accumulate: options.accumulate ?? false,
    optimization: options.optimization,
  });
}

export function initTinyLm(c: TinyLmConfig, random: () => number): ParameterInit[] {
  const dtype = c.dtype ?? 'float32';
  return expectedTensors(tinyModelConfig(c)).map(({ name, shape, role }) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const isNorm = role === 'norm';
    const values = Array.from({ length: n }, () => (isNorm ? 1 : (random() * 2 - 1) * 0.08));
    const data = dtype === 'float64' ? Float64Array.from(values) : Float32Array.from(values);
    return { name, value: { dtype, shape, data }, decay: role === 'linear' || role === 'embedding' };
  });
}

/** A next-token batch from token sequences of equal length T+1. */
export function lmBatch(sequences: number[][], dtype: 'float32' | 'float64' = 'float32'): Record<string, HostTensor> {
  const B = sequences.length;
  const T = sequences[0].length - 1;
  const ids = new BigInt64Array(B * T);
  const targets = new BigInt64Array(B * T);
  const positions = new BigInt64Array(B * T);
  const keyMask = new BigInt64Array(B * T).fill(1n);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      ids[b * T + t] = BigInt(sequences[b][t]);
      targets[b * T + t] = BigInt(sequences[b][t + 1]);
      positions[b * T + t] = BigInt(t);
    }
  }
  const mask = dtype === 'float64' ? new Float64Array(B * T).fill(1) : new Float32Array(B * T).fill(1);
  return {
    ids: { dtype: 'int64', shape: [B, T], data: ids },
    targets: { dtype: 'int64', shape: [B, T], data: targets },
    loss_mask: { dtype, shape: [B, T], data: mask },
    key_mask: { dtype: 'int64', shape: [B, T], data: keyMask },
    positions: { dtype: 'int64', shape: [B, T], data: positions },
  };
}
