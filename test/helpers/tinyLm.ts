/**
 * A tiny decoder LM built from the model layers, for engine tests (memorisation, devices,
 * benchmarks): embedding → N pre-norm blocks → RMSNorm → LM head → masked mean NLL.
 */
import { Graph, type Tensor } from '../../trainer/engine/graph';
import * as op from '../../trainer/engine/ops';
import type { HostTensor } from '../../trainer/engine/runtime/tensors';
import type { Device } from '../../trainer/engine/device/device';
import { DEFAULT_ADAMW, type AdamWConfig } from '../../trainer/engine/optimizer';
import { OptimizerRuntime } from '../../trainer/engine/optimizerRuntime';
import { causalMask } from '../../trainer/models/layers/attention';
import { decoderBlock } from '../../trainer/models/layers/decoderBlock';
import { linear } from '../../trainer/models/layers/linear';
import { rmsNorm } from '../../trainer/models/layers/norm';
import { rotaryTables } from '../../trainer/models/layers/rotary';

export interface TinyLmConfig {
  vocab: number;
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  ffn: number;
  dtype?: 'float32' | 'float64';
}

export function tinyLmParameterShapes(c: TinyLmConfig): Record<string, number[]> {
  const hd = c.hidden / c.heads;
  const shapes: Record<string, number[]> = { embed: [c.vocab, c.hidden] };
  for (let l = 0; l < c.layers; l++) {
    Object.assign(shapes, {
      [`l${l}.input_norm`]: [c.hidden],
      [`l${l}.q`]: [c.heads * hd, c.hidden],
      [`l${l}.k`]: [c.kvHeads * hd, c.hidden],
      [`l${l}.v`]: [c.kvHeads * hd, c.hidden],
      [`l${l}.o`]: [c.hidden, c.heads * hd],
      [`l${l}.post_norm`]: [c.hidden],
      [`l${l}.gate`]: [c.ffn, c.hidden],
      [`l${l}.up`]: [c.ffn, c.hidden],
      [`l${l}.down`]: [c.hidden, c.ffn],
    });
  }
  shapes.final_norm = [c.hidden];
  shapes.lm_head = [c.vocab, c.hidden];
  return shapes;
}

/** The forward graph and its loss; data inputs: ids, targets [B, T] int64, loss_mask [B, T], key_mask, positions. */
export function buildTinyLm(c: TinyLmConfig, name = 'tiny_lm'): { graph: Graph; loss: Tensor; params: Tensor[] } {
  const dtype = c.dtype ?? 'float32';
  const g = new Graph(name);
  const shapes = tinyLmParameterShapes(c);
  const p: Record<string, Tensor> = {};
  for (const [n, s] of Object.entries(shapes)) p[n] = g.input(n, dtype, s);
  const ids = g.input('ids', 'int64', ['B', 'T']);
  const targets = g.input('targets', 'int64', ['B', 'T']);
  const lossMask = g.input('loss_mask', dtype, ['B', 'T']);
  const keyMask = g.input('key_mask', 'int64', ['B', 'T']);
  const positions = g.input('positions', 'int64', ['B', 'T']);
  const hd = c.hidden / c.heads;
  const rotary = rotaryTables(positions, Float64Array.from({ length: hd / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / hd)), dtype);
  const mask = causalMask(keyMask);
  let h = g.withScope('embed', () => op.gather(p.embed, ids, 0));
  for (let l = 0; l < c.layers; l++) {
    h = g.withScope(`layers.${l}`, () =>
      decoderBlock(
        h,
        {
          inputNorm: p[`l${l}.input_norm`],
          attention: { q: p[`l${l}.q`], k: p[`l${l}.k`], v: p[`l${l}.v`], o: p[`l${l}.o`] },
          postAttentionNorm: p[`l${l}.post_norm`],
          mlp: { gate: p[`l${l}.gate`], up: p[`l${l}.up`], down: p[`l${l}.down`] },
        },
        { numHeads: c.heads, numKvHeads: c.kvHeads, headDim: hd, rmsNormEps: 1e-6 },
        rotary,
        mask,
      ),
    );
  }
  const logits = g.withScope('lm_head', () => linear(rmsNorm(h, p.final_norm, 1e-6), p.lm_head));
  const loss = g.withScope('loss', () => {
    const logProbs = op.logSoftmax(logits, -1);
    const picked = op.squeeze(op.gatherElements(logProbs, op.unsqueeze(targets, [-1]), -1), [-1]);
    return op.neg(op.div(op.reduceSum(op.mul(picked, lossMask)), op.maximum(op.reduceSum(lossMask), 1)));
  });
  return { graph: g, loss, params: Object.keys(shapes).map((n) => p[n]) };
}

export interface ParameterInit {
  name: string;
  value: HostTensor;
  decay: boolean;
}

/** An OptimizerRuntime training the tiny LM from `init`. */
export function tinyLmOptimizer(device: Device, config: TinyLmConfig, init: ParameterInit[], options: { adamw?: AdamWConfig; accumulate?: boolean; optimization?: 'basic' | 'all' } = {}): Promise<OptimizerRuntime> {
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
  return Object.entries(tinyLmParameterShapes(c)).map(([name, shape]) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const isNorm = shape.length === 1;
    const values = Array.from({ length: n }, () => (isNorm ? 1 : (random() * 2 - 1) * 0.08));
    const data = dtype === 'float64' ? Float64Array.from(values) : Float32Array.from(values);
    return { name, value: { dtype, shape, data }, decay: !isNorm };
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
