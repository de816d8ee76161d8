import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';

/**
 * y = x·Wᵀ + b with W in Hugging Face's [out, in] layout, as one Gemm over the flattened
 * leading axes: neither the forward nor the backward pass copies W into a transposed layout.
 */
export function linear(x: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  if (x.rank === 2) return op.gemm(x, weight, bias, { transB: true });
  const out = weight.shape[0];
  const y = op.gemm(op.reshape(x, [-1, x.shape[x.rank - 1]]), weight, bias, { transB: true });
  const leading = x.shape.slice(0, -1);
  if (leading.every((d) => typeof d === 'number')) return op.reshape(y, [...leading, out]);
  const g = x.graph;
  return op.reshapeTo(y, op.concat([op.shapeOf(x, 0, -1), g.int64s([out as number])], 0), [...leading, out]);
}
