import type { Tensor } from '../graph';
import { normalizeAxis } from '../shape';
import { fail, requireFloat } from './common';
import { exp, log, sub } from './elementwise';
import { reduceMax, reduceSum } from './reduce';

/** Softmax along one axis (ONNX Softmax, opset 13 semantics). */
export function softmax(x: Tensor, axis = -1): Tensor {
  requireFloat('Softmax', x);
  let a: number;
  try {
    a = normalizeAxis(axis, x.rank);
  } catch (error) {
    return fail('Softmax', x.graph, (error as Error).message, x);
  }
  return x.graph.addNode('Softmax', [x], [{ dtype: x.dtype, shape: x.shape }], { axis: a })[0];
}

/**
 * log(softmax(x)) along `axis`, decomposed into ReduceMax/Sub/Exp/ReduceSum/Log because the
 * WebGPU provider has no LogSoftmax kernel. The max is a stop-gradient point: its gradient
 * cancels exactly, and leaving it out keeps ties from splitting the gradient.
 */
export function logSoftmax(x: Tensor, axis = -1): Tensor {
  requireFloat('LogSoftmax', x);
  const a = normalizeAxis(axis, x.rank);
  const g = x.graph;
  return g.withScope('log_softmax', () => {
    const shifted = sub(x, g.stopGradient(reduceMax(x, [a], true)));
    return sub(shifted, log(reduceSum(exp(shifted), [a], true)));
  });
}
