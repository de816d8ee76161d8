/**
 * A float64 central-difference check of every op's gradient rule: each case builds a small
 * graph, projects the op's output onto fixed random weights (so every output element
 * matters), and compares d loss / d inputs with finite differences.
 */
import { describe, it } from 'node:test';
import { gradCheck } from '../../helpers/gradcheck';
import { Graph, type Tensor } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { assertGradients, f64, i64, seeded } from '../../helpers/engine';

interface Case {
  name: string;
  inputs: Record<string, HostTensor>;
  /** Inputs not differentiated (indices, conditions). */
  constants?: Record<string, HostTensor>;
  build: (x: Record<string, Tensor>, g: Graph) => Tensor;
  /** For ops that round through float32, a step and tolerance that float32 resolution allows. */
  step?: number;
  tolerance?: number;
}

/** loss = Σ out ⊙ w, with w fixed random weights the shape of out. */
async function check(c: Case): Promise<void> {
  const random = seeded(c.name.length * 7919 + 17);
  let weights: HostTensor | undefined;
  const build = (g: Graph) => {
    const x: Record<string, Tensor> = {};
    for (const [name, v] of Object.entries(c.inputs)) x[name] = g.input(name, 'float64', v.shape);
    for (const [name, v] of Object.entries(c.constants ?? {})) x[name] = g.input(name, v.dtype, v.shape);
    const out = c.build(x, g);
    const shape = out.shape.map(Number);
    if (shape.some((d) => !Number.isFinite(d))) throw new Error(`${c.name}: output shape ${out.shape} is not static`);
    weights ??= f64(shape, random);
    const w = g.input('projection', 'float64', shape);
    const loss = op.reduceSum(op.mul(out, w));
    return { loss, wrt: Object.keys(c.inputs).map((k) => x[k]) };
  };
  // Build once to learn the projection's shape, then check.
  build(new Graph('probe'));
  const results = await gradCheck(
    build,
    { ...c.inputs, ...(c.constants ?? {}), projection: weights! },
    { step: c.step },
  );
  assertGradients(results, c.tolerance);
}

const r = seeded(42);
const positive = (shape: number[]) => f64(shape, r, 0.5, 1.5);

const cases: Case[] = [
  {
    name: 'Add with broadcasting',
    inputs: { a: f64([2, 3, 4], r), b: f64([3, 1], r) },
    build: ({ a, b }) => op.add(a, b),
  },
  {
    name: 'Sub with broadcasting',
    inputs: { a: f64([4], r), b: f64([2, 3, 4], r) },
    build: ({ a, b }) => op.sub(a, b),
  },
  {
    name: 'Mul with broadcasting',
    inputs: { a: f64([2, 1, 4], r), b: f64([3, 4], r) },
    build: ({ a, b }) => op.mul(a, b),
  },
  { name: 'Div', inputs: { a: f64([3, 4], r), b: positive([1, 4]) }, build: ({ a, b }) => op.div(a, b) },
  { name: 'Pow', inputs: { a: positive([3, 4]), b: f64([4], r, 0.5, 1) }, build: ({ a, b }) => op.pow(a, b) },
  { name: 'Pow by a constant', inputs: { a: positive([5]) }, build: ({ a }) => op.pow(a, 3) },
  { name: 'Neg', inputs: { a: f64([6], r) }, build: ({ a }) => op.neg(a) },
  { name: 'Exp', inputs: { a: f64([6], r) }, build: ({ a }) => op.exp(a) },
  { name: 'Log', inputs: { a: positive([6]) }, build: ({ a }) => op.log(a) },
  { name: 'Sqrt', inputs: { a: positive([6]) }, build: ({ a }) => op.sqrt(a) },
  { name: 'Reciprocal', inputs: { a: positive([6]) }, build: ({ a }) => op.reciprocal(a) },
  { name: 'Abs', inputs: { a: f64([8], r, 1, 0) }, build: ({ a }) => op.abs(a) },
  { name: 'Sigmoid', inputs: { a: f64([6], r, 3) }, build: ({ a }) => op.sigmoid(a) },
  { name: 'Tanh', inputs: { a: f64([6], r, 2) }, build: ({ a }) => op.tanh(a) },
  { name: 'Sin', inputs: { a: f64([6], r, 3) }, build: ({ a }) => op.sin(a) },
  { name: 'Cos', inputs: { a: f64([6], r, 3) }, build: ({ a }) => op.cos(a) },
  // onnxruntime's Erf is float32 only: the rule is checked through float32, with a step float32 resolves.
  {
    name: 'Erf (float32 kernel)',
    inputs: { a: f64([6], r, 2) },
    build: ({ a }) => op.cast(op.erf(op.cast(a, 'float32')), 'float64'),
    step: 1e-2,
    tolerance: 1e-4,
  },
  { name: 'erf in float64 (composite)', inputs: { a: f64([8], r, 3) }, build: ({ a }) => op.erf(a) },
  { name: 'Softmax', inputs: { a: f64([3, 5], r, 2) }, build: ({ a }) => op.softmax(a, -1) },
  { name: 'Softmax over axis 0', inputs: { a: f64([3, 5], r, 2) }, build: ({ a }) => op.softmax(a, 0) },
  { name: 'LogSoftmax (decomposed)', inputs: { a: f64([3, 5], r, 2) }, build: ({ a }) => op.logSoftmax(a, -1) },
  { name: 'MatMul 2-D', inputs: { a: f64([3, 4], r), b: f64([4, 5], r) }, build: ({ a, b }) => op.matmul(a, b) },
  {
    name: 'MatMul batched × weight',
    inputs: { a: f64([2, 3, 4], r), b: f64([4, 5], r) },
    build: ({ a, b }) => op.matmul(a, b),
  },
  {
    name: 'MatMul batched × batched',
    inputs: { a: f64([2, 2, 3, 4], r), b: f64([2, 2, 4, 3], r) },
    build: ({ a, b }) => op.matmul(a, b),
  },
  {
    name: 'MatMul with broadcast batch',
    inputs: { a: f64([2, 3, 4], r), b: f64([1, 4, 2], r) },
    build: ({ a, b }) => op.matmul(a, b),
  },
  {
    name: 'Gemm',
    inputs: { a: f64([3, 4], r), b: f64([4, 5], r), c: f64([5], r) },
    build: ({ a, b, c }) => op.gemm(a, b, c, { alpha: 0.7, beta: 1.3 }),
  },
  {
    name: 'Gemm transA transB',
    inputs: { a: f64([4, 3], r), b: f64([5, 4], r) },
    build: ({ a, b }) => op.gemm(a, b, undefined, { transA: true, transB: true }),
  },
  {
    name: 'Gemm transA',
    inputs: { a: f64([4, 3], r), b: f64([4, 5], r) },
    build: ({ a, b }) => op.gemm(a, b, undefined, { transA: true }),
  },
  {
    name: 'Gemm transB',
    inputs: { a: f64([3, 4], r), b: f64([5, 4], r) },
    build: ({ a, b }) => op.gemm(a, b, undefined, { transB: true }),
  },
  { name: 'ReduceSum keepdims', inputs: { a: f64([2, 3, 4], r) }, build: ({ a }) => op.reduceSum(a, [1], true) },
  { name: 'ReduceSum', inputs: { a: f64([2, 3, 4], r) }, build: ({ a }) => op.reduceSum(a, [0, 2]) },
  { name: 'ReduceMean', inputs: { a: f64([2, 3, 4], r) }, build: ({ a }) => op.reduceMean(a, [-1]) },
  { name: 'ReduceMax', inputs: { a: f64([3, 5], r) }, build: ({ a }) => op.reduceMax(a, [1]) },
  { name: 'ReduceMin', inputs: { a: f64([3, 5], r) }, build: ({ a }) => op.reduceMin(a, [0], true) },
  { name: 'ReduceLogSumExp', inputs: { a: f64([3, 5], r, 2) }, build: ({ a }) => op.reduceLogSumExp(a, [1]) },
  {
    name: 'ReduceLogSumExp keepdims',
    inputs: { a: f64([3, 5], r, 2) },
    build: ({ a }) => op.reduceLogSumExp(a, [0], true),
  },
  { name: 'ReduceSumSquare', inputs: { a: f64([3, 5], r) }, build: ({ a }) => op.reduceSumSquare(a, [1]) },
  {
    name: 'Gather axis 0 (embedding, repeated ids)',
    inputs: { e: f64([5, 3], r) },
    constants: { ids: i64([2, 3], [0, 4, 4, 1, 0, 2]) },
    build: ({ e, ids }) => op.gather(e, ids, 0),
  },
  {
    name: 'Gather axis 1',
    inputs: { e: f64([2, 5, 3], r) },
    constants: { ids: i64([4], [1, 3, 3, 0]) },
    build: ({ e, ids }) => op.gather(e, ids, 1),
  },
  {
    name: 'GatherElements',
    inputs: { a: f64([3, 4], r) },
    constants: { ids: i64([3, 2], [0, 3, 1, 1, 2, 0]) },
    build: ({ a, ids }) => op.gatherElements(a, ids, 1),
  },
  {
    name: 'Gather with a scalar index',
    inputs: { e: f64([4, 3], r) },
    constants: { id: i64([], [2]) },
    build: ({ e, id }) => op.gather(e, id, 0),
  },
  {
    name: 'GatherND of rows (repeated)',
    inputs: { a: f64([4, 2, 3], r) },
    constants: { ids: i64([5, 1], [3, 0, 3, 1, 3]) },
    build: ({ a, ids }) => op.gatherND(a, ids),
  },
  {
    name: 'GatherND',
    inputs: { a: f64([3, 4], r) },
    constants: { ids: i64([3, 2], [0, 3, 2, 1, 0, 3]) },
    build: ({ a, ids }) => op.gatherND(a, ids),
  },
  {
    name: 'ScatterND add',
    inputs: { d: f64([4, 3], r), u: f64([3, 3], r) },
    constants: { ids: i64([3, 1], [1, 3, 1]) },
    build: ({ d, u, ids }) => op.scatterND(d, ids, u, 'add'),
  },
  {
    name: 'ScatterND',
    inputs: { d: f64([4, 3], r), u: f64([2, 3], r) },
    constants: { ids: i64([2, 1], [0, 2]) },
    build: ({ d, u, ids }) => op.scatterND(d, ids, u),
  },
  {
    name: 'ScatterElements add',
    inputs: { d: f64([3, 4], r), u: f64([3, 2], r) },
    constants: { ids: i64([3, 2], [0, 0, 3, 1, 2, 2]) },
    build: ({ d, u, ids }) => op.scatterElements(d, ids, u, 1, 'add'),
  },
  {
    name: 'ScatterElements',
    inputs: { d: f64([3, 4], r), u: f64([3, 1], r) },
    constants: { ids: i64([3, 1], [0, 3, 1]) },
    build: ({ d, u, ids }) => op.scatterElements(d, ids, u, 1),
  },
  { name: 'Reshape', inputs: { a: f64([2, 3, 4], r) }, build: ({ a }) => op.reshape(a, [6, -1]) },
  { name: 'Transpose', inputs: { a: f64([2, 3, 4], r) }, build: ({ a }) => op.transpose(a, [2, 0, 1]) },
  { name: 'Expand', inputs: { a: f64([3, 1], r) }, build: ({ a }, g) => op.expand(a, g.int64s([2, 3, 4]), [2, 3, 4]) },
  { name: 'Concat', inputs: { a: f64([2, 3], r), b: f64([2, 2], r) }, build: ({ a, b }) => op.concat([a, b, a], 1) },
  {
    name: 'Slice',
    inputs: { a: f64([4, 6], r) },
    build: ({ a }) => op.slice(a, { starts: [1, -4], ends: [3, 100], axes: [0, 1] }),
  },
  {
    name: 'Split',
    inputs: { a: f64([5, 3], r) },
    build: ({ a }) => {
      const [p, , q] = op.split(a, [2, 1, 2], 0);
      return op.concat([q, p], 1);
    },
  },
  {
    name: 'Squeeze and Unsqueeze',
    inputs: { a: f64([3, 1, 4], r) },
    build: ({ a }) => op.unsqueeze(op.squeeze(a, [1]), [0, 3]),
  },
  {
    name: 'Where',
    inputs: { a: f64([3, 4], r), b: f64([4], r) },
    constants: {
      c: { dtype: 'bool', shape: [3, 4], data: Uint8Array.from({ length: 12 }, (_, i) => ((i * 5) % 3 === 0 ? 1 : 0)) },
    },
    build: ({ a, b, c }) => op.where(c, a, b),
  },
  {
    name: 'comparisons and Cast on the path',
    inputs: { a: f64([6], r) },
    build: ({ a }) => op.mul(a, op.cast(op.greater(a, 0), 'float64')),
  },
  {
    name: 'Cast float64 → float32 → float64',
    inputs: { a: f64([6], r) },
    build: ({ a }) => op.cast(op.mul(op.cast(a, 'float32'), 1), 'float64'),
    step: 1e-2,
    tolerance: 1e-4,
  },
  { name: 'Clip', inputs: { a: f64([12], r, 2) }, build: ({ a }) => op.clip(a, -0.5, 0.8) },
  {
    name: 'Min and Max',
    inputs: { a: f64([8], r), b: f64([8], r) },
    build: ({ a, b }) => op.add(op.minimum(a, b), op.mul(op.maximum(a, b), 2)),
  },
  {
    name: 'Trilu',
    inputs: { a: f64([2, 4, 4], r) },
    build: ({ a }) => op.add(op.trilu(a, false), op.trilu(a, true, 2)),
  },
  {
    name: 'Range (no gradient) and Identity',
    inputs: { a: f64([5], r) },
    build: ({ a }, g) =>
      op.mul(
        op.identity(a),
        op.cast(op.range(g.scalar(0, 'int64'), g.scalar(5, 'int64'), g.scalar(1, 'int64')), 'float64'),
      ),
  },
  { name: 'fan-out accumulates', inputs: { a: f64([5], r) }, build: ({ a }) => op.add(op.mul(a, a), op.sin(a)) },
];

describe('gradient rule of every op (float64 finite differences, relative error < 1e-6)', () => {
  for (const c of cases) it(c.name, () => check(c));
});
