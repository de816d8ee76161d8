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

/** LayerNorm over the last axis (torch.nn.LayerNorm): (x − mean) / sqrt(var + eps) · weight + bias, biased variance. */
export function layerNorm(x: Tensor, weight: Tensor, bias: Tensor, eps: number): Tensor {
  const g = x.graph;
  return g.withScope('layer_norm', () => {
    const centred = op.sub(x, op.reduceMean(x, [-1], true));
    const variance = op.reduceMean(op.mul(centred, centred), [-1], true);
    return op.add(op.mul(op.div(centred, op.sqrt(op.add(variance, eps))), weight), bias);
  });
}
