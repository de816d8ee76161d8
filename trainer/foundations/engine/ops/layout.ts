import type { DType } from '../dtype';
import type { Tensor } from '../graph';
import { normalizeAxis, productDim, type Dim } from '../shape';
import { constantInts, fail, requireInteger, unknownDim } from './common';

/**
 * Reshape to `dims`. Each entry is a size (number), -1 (inferred), or a symbol. A symbol at
 * the position it has in the input is passed to onnxruntime as 0 ("copy the input's
 * dimension"); one symbol elsewhere is inferred like -1. Shapes needing more than that are
 * built at run time with `reshapeTo`.
 */
export function reshape(x: Tensor, dims: readonly Dim[]): Tensor {
  const g = x.graph;
  const target: number[] = [];
  const shape: Dim[] = [];
  let inferred = -1;
  const infer = (i: number, d: Dim) => {
    if (inferred >= 0)
      fail(
        'Reshape',
        g,
        `${JSON.stringify(dims)} leaves more than one dimension to infer; use reshapeTo with a run-time shape`,
        x,
      );
    inferred = i;
    target.push(-1);
    shape.push(d);
  };
  dims.forEach((d, i) => {
    if (d === -1) infer(i, -1);
    else if (typeof d === 'number') {
      if (!Number.isInteger(d) || d <= 0)
        fail('Reshape', g, `sizes must be positive integers, -1, or symbols; got ${d}`, x);
      target.push(d);
      shape.push(d);
    } else if (x.shape[i] === d) {
      target.push(0);
      shape.push(d);
    } else infer(i, d);
  });
  const total = productDim(x.shape);
  const known = productDim(shape.filter((_, i) => i !== inferred));
  if (inferred >= 0) {
    const size = typeof total === 'number' && typeof known === 'number' ? total / known : divideDims(total, known);
    if (typeof size === 'number' && !Number.isInteger(size))
      fail('Reshape', g, `${total} elements do not split into ${JSON.stringify(dims)}`, x);
    if (typeof shape[inferred] === 'number') shape[inferred] = size;
  } else if (typeof total === 'number' && typeof known === 'number' && total !== known) {
    fail('Reshape', g, `${total} elements cannot become ${known} (${JSON.stringify(dims)})`, x);
  }
  return g.addNode('Reshape', [x, g.int64s(target)], [{ dtype: x.dtype, shape }])[0];
}

/** total / known for symbolic products ('B*T*256' / 256 = 'B*T'); an unknown symbol when it does not divide cleanly. */
function divideDims(total: Dim, known: Dim): Dim {
  const factors = (d: Dim) => (typeof d === 'number' ? [String(d)] : d.split('*'));
  const rest = factors(total);
  for (const f of factors(known)) {
    if (f === '1') continue;
    const i = rest.indexOf(f);
    if (i < 0) {
      const n = Number(f);
      const j = rest.findIndex((r) => /^\d+$/.test(r) && Number(r) % n === 0);
      if (Number.isFinite(n) && j >= 0) {
        rest[j] = String(Number(rest[j]) / n);
        continue;
      }
      return unknownDim();
    }
    rest.splice(i, 1);
  }
  const numeric = rest.filter((r) => /^\d+$/.test(r)).reduce((a, r) => a * Number(r), 1);
  const symbols = rest.filter((r) => !/^\d+$/.test(r));
  return productDim([numeric, ...symbols]);
}

/** Reshape to a shape only known at run time (an int64 tensor), with the result's shape given for checking. */
export function reshapeTo(x: Tensor, shapeTensor: Tensor, resultShape: readonly Dim[]): Tensor {
  requireInteger('Reshape', shapeTensor);
  return x.graph.addNode('Reshape', [x, shapeTensor], [{ dtype: x.dtype, shape: resultShape }])[0];
}

export function transpose(x: Tensor, perm: readonly number[]): Tensor {
  if (perm.length !== x.rank || [...perm].sort().some((p, i) => p !== i))
    fail('Transpose', x.graph, `perm ${JSON.stringify(perm)} is not a permutation of ${x.rank} axes`, x);
  return x.graph.addNode('Transpose', [x], [{ dtype: x.dtype, shape: perm.map((p) => x.shape[p]) }], { perm })[0];
}

/** The shape of `x` as a 1-D int64 tensor (optionally the dims [start, end)). */
export function shapeOf(x: Tensor, start?: number, end?: number): Tensor {
  const attributes: Record<string, number> = {};
  if (start !== undefined) attributes.start = start;
  if (end !== undefined) attributes.end = end;
  const s = start === undefined ? 0 : normalizeAxis(start, x.rank);
  const e = end === undefined ? x.rank : end < 0 ? end + x.rank : end;
  return x.graph.addNode('Shape', [x], [{ dtype: 'int64', shape: [e - s] }], attributes)[0];
}

/** Broadcast `x` to `shape` (an int64 tensor), with the result's shape given for checking. */
export function expand(x: Tensor, shapeTensor: Tensor, resultShape: readonly Dim[]): Tensor {
  requireInteger('Expand', shapeTensor);
  return x.graph.addNode('Expand', [x, shapeTensor], [{ dtype: x.dtype, shape: resultShape }])[0];
}

/** Broadcast `x` to the shape of `like`. */
export function expandAs(x: Tensor, like: Tensor): Tensor {
  return expand(x, shapeOf(like), like.shape);
}

/** A tensor of `like`'s shape filled with `value` (Expand of a scalar: runs on WebGPU, unlike ConstantOfShape). */
export function fullLike(like: Tensor, value: number, dtype: DType = like.dtype): Tensor {
  return expand(like.graph.scalar(value, dtype), shapeOf(like), like.shape);
}

export function concat(xs: readonly Tensor[], axis: number): Tensor {
  if (xs.length === 0) throw new Error('Concat needs at least one tensor');
  const g = xs[0].graph;
  const rank = xs[0].rank;
  const a = normalizeAxis(axis, rank);
  const shape = [...xs[0].shape];
  const along: Dim[] = [];
  for (const x of xs) {
    if (x.rank !== rank || x.dtype !== xs[0].dtype)
      fail('Concat', g, 'all tensors need the same rank and dtype', ...xs);
    x.shape.forEach((d, i) => {
      if (i !== a && typeof d === 'number' && typeof shape[i] === 'number' && d !== shape[i])
        fail('Concat', g, `dimension ${i} differs`, ...xs);
    });
    along.push(x.shape[a]);
  }
  shape[a] = along.every((d) => typeof d === 'number')
    ? (along as number[]).reduce((p, q) => p + q, 0)
    : along.some((d) => typeof d !== 'number')
      ? unknownDim()
      : 0;
  return g.addNode('Concat', xs, [{ dtype: xs[0].dtype, shape }], { axis: a })[0];
}

export interface SliceSpec {
  starts: readonly number[];
  ends: readonly number[];
  axes?: readonly number[];
  steps?: readonly number[];
}

/** Slice with constant bounds (ONNX semantics: negative indices count from the end, ends clamp). */
export function slice(x: Tensor, spec: SliceSpec): Tensor {
  const g = x.graph;
  const axes = (spec.axes ?? spec.starts.map((_, i) => i)).map((a) => normalizeAxis(a, x.rank));
  const steps = spec.steps ?? axes.map(() => 1);
  if (spec.starts.length !== axes.length || spec.ends.length !== axes.length || steps.length !== axes.length)
    fail('Slice', g, 'starts, ends, axes and steps need one entry per sliced axis', x);
  const shape = [...x.shape];
  axes.forEach((axis, i) => {
    const d = x.shape[axis];
    const step = steps[i];
    if (step === 0) fail('Slice', g, 'a step cannot be 0', x);
    if (typeof d !== 'number') {
      shape[axis] = unknownDim();
      return;
    }
    const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
    let start = spec.starts[i] < 0 ? spec.starts[i] + d : spec.starts[i];
    let end = spec.ends[i] < 0 ? spec.ends[i] + d : spec.ends[i];
    if (step > 0) {
      start = clamp(start, 0, d);
      end = clamp(end, 0, d);
      shape[axis] = Math.max(0, Math.ceil((end - start) / step));
    } else {
      start = clamp(start, 0, d - 1);
      end = clamp(end, -1, d - 1);
      shape[axis] = Math.max(0, Math.ceil((end - start) / step));
    }
  });
  return g.addNode(
    'Slice',
    [x, g.int64s(spec.starts), g.int64s(spec.ends), g.int64s(axes), g.int64s(steps)],
    [{ dtype: x.dtype, shape }],
  )[0];
}

/** Split along `axis` into pieces of the given sizes. */
export function split(x: Tensor, sizes: readonly number[], axis: number): Tensor[] {
  const g = x.graph;
  const a = normalizeAxis(axis, x.rank);
  const d = x.shape[a];
  if (typeof d === 'number' && sizes.reduce((p, q) => p + q, 0) !== d)
    fail('Split', g, `sizes ${JSON.stringify(sizes)} do not add up to dimension ${a} (${d})`, x);
  return g.addNode(
    'Split',
    [x, g.int64s(sizes)],
    sizes.map((size) => ({ dtype: x.dtype, shape: x.shape.map((dim, i) => (i === a ? size : dim)) })),
    { axis: a },
  );
}

export function squeeze(x: Tensor, axes: readonly number[]): Tensor {
  const g = x.graph;
  const normalized = axes.map((a) => normalizeAxis(a, x.rank));
  for (const a of normalized)
    if (typeof x.shape[a] === 'number' && x.shape[a] !== 1)
      fail('Squeeze', g, `axis ${a} has size ${x.shape[a]}, not 1`, x);
  return g.addNode(
    'Squeeze',
    [x, g.int64s(normalized)],
    [{ dtype: x.dtype, shape: x.shape.filter((_, i) => !normalized.includes(i)) }],
  )[0];
}

export function unsqueeze(x: Tensor, axes: readonly number[]): Tensor {
  const g = x.graph;
  const rank = x.rank + axes.length;
  const normalized = axes.map((a) => normalizeAxis(a, rank)).sort((p, q) => p - q);
  const shape: Dim[] = [];
  let next = 0;
  for (let i = 0; i < rank; i++) shape.push(normalized.includes(i) ? 1 : x.shape[next++]);
  return g.addNode('Unsqueeze', [x, g.int64s(normalized)], [{ dtype: x.dtype, shape }])[0];
}

/** [start, limit) by delta, as ONNX Range (scalars of one dtype). */
export function range(start: Tensor, limit: Tensor, delta: Tensor, length?: Dim): Tensor {
  const known = [start, limit, delta].map((t) => constantInts(t)?.[0]);
  const size = known.every((k) => k !== undefined)
    ? Math.max(0, Math.ceil((known[1]! - known[0]!) / known[2]!))
    : (length ?? unknownDim());
  return start.graph.addNode('Range', [start, limit, delta], [{ dtype: start.dtype, shape: [size] }])[0];
}

/** Upper (or lower) triangle of the last two axes, shifted by diagonal offset k (ONNX Trilu). */
export function trilu(x: Tensor, upper: boolean, k: number | Tensor = 0): Tensor {
  const g = x.graph;
  if (x.rank < 2) fail('Trilu', g, 'needs rank >= 2', x);
  if (typeof k !== 'number' && (k.dtype !== 'int64' || k.rank !== 0))
    fail('Trilu', g, 'the diagonal offset must be an int64 scalar', k);
  const inputs = k === 0 ? [x] : [x, typeof k === 'number' ? g.constant([k], 'int64', []) : k];
  return g.addNode('Trilu', inputs, [{ dtype: x.dtype, shape: x.shape }], { upper: upper ? 1 : 0 })[0];
}

/** Split along `axis` into pieces whose sizes are only known at run time (an int64 tensor). */
export function splitBy(x: Tensor, sizes: Tensor, shapes: ReadonlyArray<readonly Dim[]>, axis: number): Tensor[] {
  requireInteger('Split', sizes);
  const a = normalizeAxis(axis, x.rank);
  return x.graph.addNode(
    'Split',
    [x, sizes],
    shapes.map((shape) => ({ dtype: x.dtype, shape })),
    { axis: a },
  );
}

/** Zero padding: `pads` is int64 [begin_0, …, begin_n, end_0, …, end_n]; the result's shape is given for checking. */
export function pad(x: Tensor, pads: Tensor, resultShape: readonly Dim[]): Tensor {
  requireInteger('Pad', pads);
  return x.graph.addNode('Pad', [x, pads], [{ dtype: x.dtype, shape: resultShape }], { mode: 'constant' })[0];
}
