import type { Tensor } from '../graph';
import { normalizeAxis, type Dim } from '../shape';
import { fail } from './common';

type ReduceOp =
  'ReduceSum' | 'ReduceMean' | 'ReduceMax' | 'ReduceMin' | 'ReduceSumSquare' | 'ReduceProd' | 'ReduceLogSumExp';

/** Normalised, sorted, de-duplicated axes; undefined means all axes. */
export function reduceAxes(x: Tensor, axes: readonly number[] | undefined, op: string): number[] {
  if (axes === undefined) return x.shape.map((_, i) => i);
  try {
    return [...new Set(axes.map((a) => normalizeAxis(a, x.rank)))].sort((a, b) => a - b);
  } catch (error) {
    return fail(op, x.graph, (error as Error).message, x);
  }
}

export function reducedShape(shape: readonly Dim[], axes: readonly number[], keepdims: boolean): Dim[] {
  const out: Dim[] = [];
  shape.forEach((d, i) => {
    if (!axes.includes(i)) out.push(d);
    else if (keepdims) out.push(1);
  });
  return out;
}

function reduce(op: ReduceOp, x: Tensor, axes: readonly number[] | undefined, keepdims: boolean): Tensor {
  const normalized = reduceAxes(x, axes, op);
  if (op !== 'ReduceMax' && op !== 'ReduceMin' && x.dtype === 'bool')
    fail(op, x.graph, 'cannot reduce a bool tensor', x);
  const g = x.graph;
  return g.addNode(
    op,
    [x, g.int64s(normalized)],
    [{ dtype: x.dtype, shape: reducedShape(x.shape, normalized, keepdims) }],
    { keepdims: keepdims ? 1 : 0 },
  )[0];
}

export const reduceSum = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceSum', x, axes, keepdims);
export const reduceMean = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceMean', x, axes, keepdims);
export const reduceMax = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceMax', x, axes, keepdims);
export const reduceMin = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceMin', x, axes, keepdims);
export const reduceSumSquare = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceSumSquare', x, axes, keepdims);

/** Index of the largest element along `axis` (int64; no gradient). */
export function argMax(x: Tensor, axis: number, keepdims = false): Tensor {
  const a = reduceAxes(x, [axis], 'ArgMax')[0];
  return x.graph.addNode('ArgMax', [x], [{ dtype: 'int64', shape: reducedShape(x.shape, [a], keepdims) }], {
    axis: a,
    keepdims: keepdims ? 1 : 0,
  })[0];
}

/** Running sum along `axis`; `exclusive` leaves out each element itself (no gradient rule). */
export function cumSum(x: Tensor, axis: number, exclusive = false): Tensor {
  const g = x.graph;
  const a = reduceAxes(x, [axis], 'CumSum')[0];
  return g.addNode('CumSum', [x, g.constant([a], 'int64', [])], [{ dtype: x.dtype, shape: x.shape }], {
    exclusive: exclusive ? 1 : 0,
  })[0];
}

/** The k largest values along the last axis, sorted descending, and their indices (no gradient). */
export function topK(x: Tensor, k: number): { values: Tensor; indices: Tensor } {
  const g = x.graph;
  const shape = [...x.shape.slice(0, -1), k];
  const [values, indices] = g.addNode(
    'TopK',
    [x, g.int64s([k])],
    [
      { dtype: x.dtype, shape },
      { dtype: 'int64', shape },
    ],
    { axis: -1, largest: 1, sorted: 1 },
  );
  return { values, indices };
}

/** log Σ exp(x) along `axes`, as one onnxruntime kernel (no softmax-sized intermediate). */
export const reduceLogSumExp = (x: Tensor, axes?: readonly number[], keepdims = false) =>
  reduce('ReduceLogSumExp', x, axes, keepdims);
