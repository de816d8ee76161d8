import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import type { Dim } from '../../engine/shape';
import { linear } from './linear';
import { rmsNorm } from './norm';
import { applyRotary, type RotaryTables } from './rotary';

export interface AttentionConfig {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
}

export interface AttentionWeights {
  q: Tensor;
  k: Tensor;
  v: Tensor;
  o: Tensor;
  qBias?: Tensor;
  kBias?: Tensor;
  vBias?: Tensor;
  /** Qwen3: RMSNorm over each head's query and key vectors, before the rotation. */
  qNorm?: Tensor;
  kNorm?: Tensor;
}

/** Score given to masked positions: vanishes in softmax, finite so fully masked (padding) rows stay NaN-free. */
export const MASKED_SCORE = -1e9;

/**
 * Which keys each query may attend, as a bool tensor [B, 1, 1, T, T] (one broadcast axis for
 * the query-head group): true where key s ≤ query t and key s is not padding. `keyMask` is
 * [B, T] with 1 for real tokens. Scores are replaced (Where), not offset, at masked places, so
 * no precision is lost to a large additive constant.
 */
export function causalMask(keyMask: Tensor): Tensor {
  const g = keyMask.graph;
  return g.withScope('causal_mask', () => {
    const seq = op.shapeOf(keyMask, 1, 2);
    const square = op.concat([seq, seq], 0);
    const ones = op.expand(g.scalar(1, 'int32'), square, [keyMask.shape[1], keyMask.shape[1]]);
    const causal = op.cast(op.trilu(ones, false), 'bool'); // [T, T]
    const real = op.cast(op.unsqueeze(keyMask, [1, 2, 3]), 'bool'); // [B, 1, 1, 1, T]
    return op.and(causal, real);
  });
}

/**
 * Grouped-query causal self-attention for x [B, T, hidden]. Queries are viewed as
 * [B, kvHeads, group, T, headDim] so each key/value head serves its group by broadcasting in
 * MatMul — keys and values are never copied per query head.
 */
export function selfAttention(x: Tensor, w: AttentionWeights, config: AttentionConfig, rotary: RotaryTables, mask: Tensor): Tensor {
  const g = x.graph;
  const { numHeads, numKvHeads, headDim } = config;
  const group = numHeads / numKvHeads;
  if (!Number.isInteger(group)) throw new Error(`attention: ${numHeads} query heads do not split into ${numKvHeads} key/value groups`);
  const [B, T] = x.shape as [Dim, Dim];
  const heads = (t: Tensor, n: number) => op.transpose(op.reshape(t, [B, T, n, headDim]), [0, 2, 1, 3]); // [B, n, T, hd]
  let q = heads(g.withScope('q_proj', () => linear(x, w.q, w.qBias)), numHeads);
  let k = heads(g.withScope('k_proj', () => linear(x, w.k, w.kBias)), numKvHeads);
  const v = heads(g.withScope('v_proj', () => linear(x, w.v, w.vBias)), numKvHeads);
  if (w.qNorm) q = g.withScope('q_norm', () => rmsNorm(q, w.qNorm!, config.rmsNormEps));
  if (w.kNorm) k = g.withScope('k_norm', () => rmsNorm(k, w.kNorm!, config.rmsNormEps));
  q = applyRotary(q, rotary);
  k = applyRotary(k, rotary);
  const context = g.withScope('scores', () => {
    const qg = op.reshape(op.mul(q, 1 / Math.sqrt(headDim)), [B, numKvHeads, group, T, headDim]);
    const kg = op.unsqueeze(k, [2]); // [B, kv, 1, T, hd]
    const vg = op.unsqueeze(v, [2]);
    const scores = op.where(mask, op.matmul(qg, op.transpose(kg, [0, 1, 2, 4, 3])), MASKED_SCORE); // [B, kv, group, T, T]
    const probs = op.softmax(scores, -1);
    return op.matmul(probs, vg); // [B, kv, group, T, hd]
  });
  const merged = op.reshape(op.transpose(op.reshape(context, [B, numHeads, T, headDim]), [0, 2, 1, 3]), [B, T, numHeads * headDim]);
  return g.withScope('o_proj', () => linear(merged, w.o));
}
