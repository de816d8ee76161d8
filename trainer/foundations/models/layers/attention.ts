import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';

/**
 * Grouped-query attention in pieces the decoder and the generation graph share. Queries are
 * viewed as [B, kvHeads, group, T, hd] so each key/value head serves its group by broadcasting
 * in MatMul — keys and values are never copied per query head.
 */

/** Score added at masked places: vanishes in softmax, finite so fully masked (padding) rows stay NaN-free. */
export const MASKED_SCORE = -1e9;

/**
 * The additive mask for scores from a bool "may attend" tensor: 0 where allowed, MASKED_SCORE
 * elsewhere. Computed once per graph at the mask's own size (no head axes) and added to each
 * layer's scores: an Add is much cheaper than a Where over [B, heads, T, T], and its gradient
 * passes through unchanged.
 */
export function maskBias(allowed: Tensor, dtype: 'float32' | 'float64'): Tensor {
  const g = allowed.graph;
  return op.where(allowed, g.scalar(0, dtype), g.scalar(MASKED_SCORE, dtype));
}

/** q·kᵀ per key/value group: q [B, kv, group, T, hd], k [B, kv, K, hd] → [B, kv, group, T, K]. */
export function groupScores(q: Tensor, k: Tensor): Tensor {
  return op.matmul(q, op.transpose(op.unsqueeze(k, [2]), [0, 1, 2, 4, 3]));
}

/** Softmax-weighted values: probabilities [B, kv, group, T, K] against values [B, kv, K, hd]. */
export function mixValues(probabilities: Tensor, v: Tensor): Tensor {
  return op.matmul(probabilities, op.unsqueeze(v, [2]));
}
