import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';

/** RMSNorm over the last axis, as Llama and Qwen define it: x / sqrt(mean(x²) + eps) · weight. */
export function rmsNorm(x: Tensor, weight: Tensor, eps: number): Tensor {
  const g = x.graph;
  return g.withScope('rms_norm', () => {
    const meanSquare = op.reduceMean(op.mul(x, x), [-1], true);
    const normalized = op.div(x, op.sqrt(op.add(meanSquare, eps)));
    return op.mul(normalized, weight);
  });
}
