import type { Tensor } from '../graph';
import { normalizeAxis } from '../shape';
import { fail, requireInteger } from './common';

/** x.take(indices, axis): out shape = x[:axis] + indices + x[axis+1:]. */
export function gather(x: Tensor, indices: Tensor, axis = 0): Tensor {
  requireInteger('Gather', indices);
  const a = normalizeAxis(axis, x.rank);
  const shape = [...x.shape.slice(0, a), ...indices.shape, ...x.shape.slice(a + 1)];
  return x.graph.addNode('Gather', [x, indices], [{ dtype: x.dtype, shape }], { axis: a })[0];
}

/** out[i][j]… = x[…][indices[i][j]…][…] along `axis`; out has the indices' shape. */
export function gatherElements(x: Tensor, indices: Tensor, axis: number): Tensor {
  requireInteger('GatherElements', indices);
  if (indices.rank !== x.rank) fail('GatherElements', x.graph, 'indices need the same rank as the data', x, indices);
  const a = normalizeAxis(axis, x.rank);
  return x.graph.addNode('GatherElements', [x, indices], [{ dtype: x.dtype, shape: indices.shape }], { axis: a })[0];
}

/** Gather slices addressed by the last axis of `indices` (ONNX GatherND, batch_dims 0). */
export function gatherND(x: Tensor, indices: Tensor): Tensor {
  requireInteger('GatherND', indices);
  const k = indices.shape[indices.rank - 1];
  if (typeof k !== 'number')
    fail('GatherND', x.graph, 'the last axis of the indices must have a known size', x, indices);
  const shape = [...indices.shape.slice(0, -1), ...x.shape.slice(k)];
  return x.graph.addNode('GatherND', [x, indices], [{ dtype: x.dtype, shape }])[0];
}

export type ScatterReduction = 'none' | 'add' | 'mul' | 'max' | 'min';

/** A copy of `data` with `updates` written (or added) at the slices addressed by `indices`. */
export function scatterND(
  data: Tensor,
  indices: Tensor,
  updates: Tensor,
  reduction: ScatterReduction = 'none',
): Tensor {
  requireInteger('ScatterND', indices);
  if (updates.dtype !== data.dtype) fail('ScatterND', data.graph, "updates need the data's dtype", data, updates);
  const attributes: Record<string, string> = reduction === 'none' ? {} : { reduction };
  return data.graph.addNode(
    'ScatterND',
    [data, indices, updates],
    [{ dtype: data.dtype, shape: data.shape }],
    attributes,
  )[0];
}

/** A copy of `data` with `updates` written (or added) at `indices` along `axis`. */
export function scatterElements(
  data: Tensor,
  indices: Tensor,
  updates: Tensor,
  axis: number,
  reduction: ScatterReduction = 'none',
): Tensor {
  requireInteger('ScatterElements', indices);
  if (updates.dtype !== data.dtype) fail('ScatterElements', data.graph, "updates need the data's dtype", data, updates);
  if (indices.rank !== data.rank || updates.rank !== data.rank)
    fail('ScatterElements', data.graph, 'data, indices and updates need one rank', data, indices, updates);
  const a = normalizeAxis(axis, data.rank);
  const attributes: Record<string, number | string> = { axis: a };
  if (reduction !== 'none') attributes.reduction = reduction;
  return data.graph.addNode(
    'ScatterElements',
    [data, indices, updates],
    [{ dtype: data.dtype, shape: data.shape }],
    attributes,
  )[0];
}
