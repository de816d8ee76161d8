import type { Node, Tensor } from './graph';
import { constantInts } from './ops/common';
import * as op from './ops';
import { normalizeAxis, productDim, type Dim } from './shape';

/**
 * Vector-Jacobian products, one per ONNX op: given d loss / d outputs, return
 * d loss / d inputs (undefined where an input needs none). `needs[i]` says whether input i
 * wants a gradient, so rules skip work nobody uses.
 */
export type VjpRule = (
  node: Node,
  outGrads: ReadonlyArray<Tensor | undefined>,
  needs: readonly boolean[],
) => ReadonlyArray<Tensor | undefined>;

/** Ops whose outputs carry no gradient to their inputs (shapes, indices, comparisons). */
export const NON_DIFFERENTIABLE = new Set([
  'Shape',
  'Size',
  'Range',
  'Equal',
  'Less',
  'LessOrEqual',
  'Greater',
  'GreaterOrEqual',
  'Not',
  'And',
  'Or',
  'ArgMax',
  'ArgMin',
  'IsNaN',
  'IsInf',
  'Sign',
  'Floor',
  'Ceil',
  'Round',
]);

/** Sum a gradient over the axes its input was broadcast along, so it takes the input's shape. */
export function unbroadcast(dy: Tensor, input: Tensor): Tensor {
  let result = dy;
  const lead = dy.rank - input.rank;
  if (lead > 0)
    result = op.reduceSum(
      result,
      Array.from({ length: lead }, (_, i) => i),
      false,
    );
  const axes: number[] = [];
  input.shape.forEach((d, i) => {
    if (d === 1 && result.shape[i] !== 1) axes.push(i);
  });
  if (axes.length) result = op.reduceSum(result, axes, true);
  return result;
}

function zerosLike(t: Tensor): Tensor {
  return op.fullLike(t, 0);
}

/**
 * The gradient of a row gather: zeros shaped like `x`, with each slice of `updates` added into the
 * row of `x` its index names (`rowIndices` any shape I, `updates` I + x.shape[1:]).
 *
 * Not ScatterND with reduction 'add': onnxruntime's CPU kernel (1.30) splits the indices across
 * its threads and adds without a lock, so two threads adding into one row — a token id that
 * repeats in the batch, as most do — race: the sum depends on timing, and an update can be lost.
 * Two pretraining runs of one recipe diverged at their first step on 8×512-token rows that way,
 * and agreed bit for bit with one thread. ScatterElements adds along its axis in index order
 * within each output column and splits only the columns across threads, so the sum is the same
 * on every run and at every thread count (test/unit/engine/scatterAddDeterminism.test.ts).
 */
function scatterAddRows(x: Tensor, rowIndices: Tensor, updates: Tensor): Tensor {
  const g = x.graph;
  const rest = x.shape.slice(1);
  const count = productDim(rowIndices.shape);
  const rows = op.reshapeTo(updates, rest.length ? op.concat([g.int64s([-1]), op.shapeOf(x, 1)], 0) : g.int64s([-1]), [
    count,
    ...rest,
  ]);
  // int32: WebGPU's Expand takes no int64, and an [N, width] index tensor must not fall back to the CPU.
  const flatIndices = op.cast(op.reshape(rowIndices, [-1]), 'int32');
  const columnIndices = op.expandAs(
    rest.length
      ? op.unsqueeze(
          flatIndices,
          rest.map((_, i) => i + 1),
        )
      : flatIndices,
    rows,
  );
  return op.scatterElements(zerosLike(x), columnIndices, rows, 0, 'add');
}

/** The constant axes input of a Reduce node (opset 18), normalised. */
function reduceAxesOf(node: Node): number[] {
  const x = node.inputs[0]!;
  const axes = constantInts(node.inputs[1]);
  if (axes === undefined) return x.shape.map((_, i) => i);
  return axes.map((a) => normalizeAxis(a, x.rank));
}

/** Bring a reduced gradient back to the input's shape (re-inserting reduced axes, then expanding). */
function expandReduced(node: Node, dy: Tensor): Tensor {
  const x = node.inputs[0]!;
  const keep = node.int('keepdims', 1) === 1;
  const axes = reduceAxesOf(node);
  const kept = keep ? dy : op.unsqueeze(dy, axes);
  return op.expandAs(kept, x);
}

/** The number of elements a Reduce node folded into each output, as a scalar of x's dtype. */
function reducedCount(node: Node): Tensor {
  const x = node.inputs[0]!;
  const axes = reduceAxesOf(node);
  const dims = axes.map((a) => x.shape[a]);
  if (dims.every((d): d is number => typeof d === 'number'))
    return x.graph.scalar(
      dims.reduce((p, q) => p * q, 1),
      x.dtype,
    );
  return op.cast(op.div(op.size(x), op.size(node.outputs[0])), x.dtype);
}

function inversePerm(perm: readonly number[]): number[] {
  const inverse = new Array<number>(perm.length);
  perm.forEach((p, i) => (inverse[p] = i));
  return inverse;
}

function swapLastTwo(t: Tensor): Tensor {
  const perm = t.shape.map((_, i) => i);
  [perm[t.rank - 2], perm[t.rank - 1]] = [perm[t.rank - 1], perm[t.rank - 2]];
  return op.transpose(t, perm);
}

/** Collapse all leading axes: [a, b, …, k] → [a·b·…, k]. */
function flatten2d(t: Tensor): Tensor {
  return op.reshape(t, [-1, t.shape[t.rank - 1]]);
}

export const VJP_RULES: Record<string, VjpRule> = {
  Identity: (_n, [dy]) => [dy],
  Add: (n, [dy], needs) => [
    needs[0] ? unbroadcast(dy!, n.inputs[0]!) : undefined,
    needs[1] ? unbroadcast(dy!, n.inputs[1]!) : undefined,
  ],
  Sub: (n, [dy], needs) => [
    needs[0] ? unbroadcast(dy!, n.inputs[0]!) : undefined,
    needs[1] ? unbroadcast(op.neg(dy!), n.inputs[1]!) : undefined,
  ],
  Mul: (n, [dy], needs) => {
    const [a, b] = n.inputs as Tensor[];
    return [
      needs[0] ? unbroadcast(op.mul(dy!, b), a) : undefined,
      needs[1] ? unbroadcast(op.mul(dy!, a), b) : undefined,
    ];
  },
  Div: (n, [dy], needs) => {
    const [a, b] = n.inputs as Tensor[];
    const y = n.outputs[0];
    return [
      needs[0] ? unbroadcast(op.div(dy!, b), a) : undefined,
      needs[1] ? unbroadcast(op.neg(op.div(op.mul(dy!, y), b)), b) : undefined,
    ];
  },
  Pow: (n, [dy], needs) => {
    const [a, b] = n.inputs as Tensor[];
    const y = n.outputs[0];
    const da = needs[0] ? unbroadcast(op.mul(dy!, op.mul(b, op.pow(a, op.sub(b, 1)))), a) : undefined;
    const db = needs[1] ? unbroadcast(op.mul(dy!, op.mul(y, op.log(a))), b) : undefined;
    return [da, db];
  },
  Neg: (_n, [dy]) => [op.neg(dy!)],
  Exp: (n, [dy]) => [op.mul(dy!, n.outputs[0])],
  Log: (n, [dy]) => [op.div(dy!, n.inputs[0]!)],
  Sqrt: (n, [dy]) => [op.div(op.mul(dy!, 0.5), n.outputs[0])],
  Reciprocal: (n, [dy]) => [op.neg(op.mul(dy!, op.mul(n.outputs[0], n.outputs[0])))],
  Abs: (n, [dy]) => [op.mul(dy!, op.sign(n.inputs[0]!))],
  Sigmoid: (n, [dy]) => {
    const y = n.outputs[0];
    return [op.mul(dy!, op.mul(y, op.sub(1, y)))];
  },
  Tanh: (n, [dy]) => {
    const y = n.outputs[0];
    return [op.mul(dy!, op.sub(1, op.mul(y, y)))];
  },
  Sin: (n, [dy]) => [op.mul(dy!, op.cos(n.inputs[0]!))],
  // d erf(x) / dx = 2/√π · exp(−x²)
  Erf: (n, [dy]) => {
    const x = n.inputs[0]!;
    return [op.mul(dy!, op.mul(op.exp(op.neg(op.mul(x, x))), 2 / Math.sqrt(Math.PI)))];
  },
  Cos: (n, [dy]) => [op.neg(op.mul(dy!, op.sin(n.inputs[0]!)))],
  Softmax: (n, [dy]) => {
    const y = n.outputs[0];
    const axis = n.int('axis', -1);
    return [op.mul(y, op.sub(dy!, op.reduceSum(op.mul(dy!, y), [axis], true)))];
  },
  LogSoftmax: (n, [dy]) => {
    const axis = n.int('axis', -1);
    return [op.sub(dy!, op.mul(op.exp(n.outputs[0]), op.reduceSum(dy!, [axis], true)))];
  },
  MatMul: (n, [dy], needs) => {
    const [a, b] = n.inputs as Tensor[];
    let da: Tensor | undefined;
    let db: Tensor | undefined;
    if (needs[0]) {
      if (b.rank !== 2) da = unbroadcast(op.matmul(dy!, swapLastTwo(b)), a);
      // A weight matrix (rank 2) is read transposed by Gemm instead of being copied.
      else if (a.rank === 2) da = op.gemm(dy!, b, undefined, { transB: true });
      else da = op.reshapeTo(op.gemm(flatten2d(dy!), b, undefined, { transB: true }), op.shapeOf(a), a.shape);
    }
    if (needs[1]) {
      if (b.rank !== 2) db = unbroadcast(op.matmul(swapLastTwo(a), dy!), b);
      // x·W with x [..., k] and W [k, n]: dW = Σ_batch xᵀ·dy, one Gemm over the flattened batch.
      else
        db =
          a.rank === 2
            ? op.gemm(a, dy!, undefined, { transA: true })
            : op.gemm(flatten2d(a), flatten2d(dy!), undefined, { transA: true });
    }
    return [da, db];
  },
  // dx = dy · dequantize(W) [rows, columns]: the frozen quantized weight gets no gradient. Codes
  // read from graph inputs, directly or through a Slice (a block of an LM head's rows), are
  // dequantized from their twins (Graph.inputTwin), so a session may bake the forward's codes in,
  // packed, without onnxruntime folding a float32 copy of W.
  MatMulNBits: (n, [dy]) => {
    const [x, data, scales] = (n.inputs as Tensor[]).map((t, i) => (i > 0 ? fromTwin(t) : t));
    const bits = n.int('bits', 4);
    if (bits !== 4 && bits !== 8) throw new Error(`MatMulNBits: no gradient rule for ${bits}-bit weights`);
    const w = op.dequantizeRows(data, scales, { bits, blockSize: n.int('block_size', 32) }, 'float32');
    if (x.rank === 2) return [op.gemm(dy!, w), undefined, undefined];
    return [op.reshapeTo(op.gemm(flatten2d(dy!), w), op.shapeOf(x), x.shape), undefined, undefined];
  },
  Gemm: (n, [dy], needs) => {
    const [a, b, c] = n.inputs as Tensor[];
    const transA = n.int('transA', 0) === 1;
    const transB = n.int('transB', 0) === 1;
    const alpha = n.float('alpha', 1);
    const beta = n.float('beta', 1);
    let da: Tensor | undefined;
    let db: Tensor | undefined;
    if (needs[0]) {
      da = transA
        ? op.gemm(b, dy!, undefined, { transA: transB, transB: true, alpha })
        : op.gemm(dy!, b, undefined, { transB: !transB, alpha });
    }
    if (needs[1]) {
      db = transB
        ? op.gemm(dy!, a, undefined, { transA: true, transB: transA, alpha })
        : op.gemm(a, dy!, undefined, { transA: !transA, alpha });
    }
    const dc = c && needs[2] ? unbroadcast(beta === 1 ? dy! : op.mul(dy!, beta), c) : undefined;
    return [da, db, dc];
  },
  ReduceSum: (n, [dy]) => [expandReduced(n, dy!)],
  ReduceMean: (n, [dy]) => [op.div(expandReduced(n, dy!), reducedCount(n))],
  ReduceSumSquare: (n, [dy]) => [op.mul(op.mul(expandReduced(n, dy!), n.inputs[0]!), 2)],
  ReduceLogSumExp: (n, [dy]) => {
    // d lse / dx = softmax(x) = exp(x − lse)
    const keep = n.int('keepdims', 1) === 1;
    const lse = keep ? n.outputs[0] : op.unsqueeze(n.outputs[0], reduceAxesOf(n));
    return [op.mul(expandReduced(n, dy!), op.exp(op.sub(n.inputs[0]!, lse)))];
  },
  ReduceMax: (n, [dy]) => [extremumGrad(n, dy!)],
  ReduceMin: (n, [dy]) => [extremumGrad(n, dy!)],
  Gather: (n, [dy]) => {
    const [x, indices] = n.inputs as Tensor[];
    const axis = n.int('axis', 0);
    if (axis === 0) return [scatterAddRows(x, indices, dy!), undefined];
    // Move the gathered axis to the front, scatter there, move it back.
    const perm = [axis, ...x.shape.map((_, i) => i).filter((i) => i !== axis)];
    const xt = op.transpose(x, perm);
    const ir = indices.rank;
    const dyPerm = [
      ...Array.from({ length: ir }, (_, i) => axis + i),
      ...Array.from({ length: axis }, (_, i) => i),
      ...Array.from({ length: dy!.rank - axis - ir }, (_, i) => axis + ir + i),
    ];
    const dxt = scatterAddRows(xt, indices, op.transpose(dy!, dyPerm));
    return [op.transpose(dxt, inversePerm(perm)), undefined];
  },
  GatherElements: (n, [dy]) => {
    const [x, indices] = n.inputs as Tensor[];
    return [op.scatterElements(zerosLike(x), indices, dy!, n.int('axis', 0), 'add'), undefined];
  },
  GatherND: (n, [dy]) => {
    const [x, indices] = n.inputs as Tensor[];
    // The k-tuples become row numbers of x seen as [d0·…·d(k-1), rest…], then add as Gather's rule does.
    const k = indices.shape[indices.rank - 1] as number;
    const leading = x.shape.slice(0, k);
    if (!leading.every((d): d is number => typeof d === 'number'))
      throw new Error(
        `no gradient rule for GatherND over data whose first ${k} dimensions are not all known sizes (${JSON.stringify(x.shape)})`,
      );
    const strides = leading.map((_, j) => leading.slice(j + 1).reduce((a, d) => a * d, 1));
    const rowOf =
      k === 1 ? op.squeeze(indices, [-1]) : op.reduceSum(op.mul(indices, x.graph.int64s(strides)), [-1], false);
    const flat = op.reshape(x, [leading.reduce((a, d) => a * d, 1), ...x.shape.slice(k)]);
    return [op.reshapeTo(scatterAddRows(flat, rowOf, dy!), op.shapeOf(x), x.shape), undefined];
  },
  ScatterND: (n, [dy], needs) => {
    const [, indices, updates] = n.inputs as Tensor[];
    const reduction = n.string('reduction', 'none');
    if (reduction !== 'none' && reduction !== 'add')
      throw new Error(`no gradient rule for ScatterND with reduction ${reduction}`);
    const dData = needs[0] ? (reduction === 'add' ? dy : op.scatterND(dy!, indices, zerosLike(updates))) : undefined;
    return [dData, undefined, needs[2] ? op.gatherND(dy!, indices) : undefined];
  },
  ScatterElements: (n, [dy], needs) => {
    const [, indices, updates] = n.inputs as Tensor[];
    const axis = n.int('axis', 0);
    const reduction = n.string('reduction', 'none');
    if (reduction !== 'none' && reduction !== 'add')
      throw new Error(`no gradient rule for ScatterElements with reduction ${reduction}`);
    const dData = needs[0]
      ? reduction === 'add'
        ? dy
        : op.scatterElements(dy!, indices, zerosLike(updates), axis)
      : undefined;
    return [dData, undefined, needs[2] ? op.gatherElements(dy!, indices, axis) : undefined];
  },
  Reshape: (n, [dy]) => {
    const x = n.inputs[0]!;
    return [op.reshapeTo(dy!, op.shapeOf(x), x.shape), undefined];
  },
  Transpose: (n, [dy]) => [op.transpose(dy!, inversePerm(n.ints('perm') ?? []))],
  Expand: (n, [dy]) => [unbroadcast(dy!, n.inputs[0]!), undefined],
  Squeeze: (n, [dy]) => [op.unsqueeze(dy!, constantInts(n.inputs[1]) ?? []), undefined],
  Unsqueeze: (n, [dy]) => [op.squeeze(dy!, constantInts(n.inputs[1]) ?? []), undefined],
  Concat: (n, [dy], needs) => {
    const xs = n.inputs as Tensor[];
    const axis = n.int('axis', 0);
    const sizes = xs.map((x) => x.shape[axis]);
    const pieces = sizes.every((s): s is number => typeof s === 'number')
      ? op.split(dy!, sizes, axis)
      : op.splitBy(
          dy!,
          op.concat(
            xs.map((x) => op.shapeOf(x, axis, axis + 1)),
            0,
          ),
          xs.map((x) => x.shape),
          axis,
        );
    return pieces.map((p, i) => (needs[i] ? p : undefined));
  },
  Split: (n, outGrads) => {
    const x = n.inputs[0]!;
    const axis = n.int('axis', 0);
    const filled = n.outputs.map((o, i) => outGrads[i] ?? zerosLike(o));
    return [op.concat(filled, normalizeAxis(axis, x.rank)), undefined];
  },
  Slice: (n, [dy]) => sliceGrad(n, dy!),
  Where: (n, [dy], needs) => {
    const [cond, a, b] = n.inputs as Tensor[];
    const zero = n.outputs[0].graph.scalar(0, dy!.dtype);
    return [
      undefined,
      needs[1] ? unbroadcast(op.where(cond, dy!, zero), a) : undefined,
      needs[2] ? unbroadcast(op.where(cond, zero, dy!), b) : undefined,
    ];
  },
  Cast: (n, [dy]) => [op.cast(dy!, n.inputs[0]!.dtype)],
  Clip: (n, [dy]) => {
    const [x, lo, hi] = n.inputs;
    let inside: Tensor | undefined;
    if (lo) inside = op.greaterOrEqual(x!, lo);
    if (hi) inside = inside ? op.and(inside, op.lessOrEqual(x!, hi)) : op.lessOrEqual(x!, hi);
    return [inside ? op.where(inside, dy!, 0) : dy, undefined, undefined];
  },
  Min: (n, [dy], needs) => extremumPairGrad(n, dy!, needs, 'Less'),
  Max: (n, [dy], needs) => extremumPairGrad(n, dy!, needs, 'Greater'),
  Trilu: (n, [dy]) => [op.trilu(dy!, n.int('upper', 1) === 1, n.inputs[1] ?? 0), undefined],
};

/** ReduceMax/ReduceMin: the gradient goes to the extreme elements, split evenly among ties. */
function extremumGrad(n: Node, dy: Tensor): Tensor {
  const x = n.inputs[0]!;
  const keep = n.int('keepdims', 1) === 1;
  const axes = reduceAxesOf(n);
  const y = keep ? n.outputs[0] : op.unsqueeze(n.outputs[0], axes);
  const hits = op.cast(op.equal(x, y), x.dtype);
  const share = op.div(hits, op.reduceSum(hits, axes, true));
  return op.mul(share, expandReduced(n, dy));
}

/** Elementwise Min/Max of two tensors: the gradient goes to the chosen operand, half each on ties. */
function extremumPairGrad(
  n: Node,
  dy: Tensor,
  needs: readonly boolean[],
  firstWins: 'Less' | 'Greater',
): ReadonlyArray<Tensor | undefined> {
  if (n.inputs.length !== 2)
    throw new Error(`no gradient rule for ${n.opType} with ${n.inputs.length} inputs (use the two-operand form)`);
  const [a, b] = n.inputs as Tensor[];
  const wins = firstWins === 'Less' ? op.less(a, b) : op.greater(a, b);
  const ties = op.equal(a, b);
  const weightA = op.add(op.cast(wins, dy.dtype), op.mul(op.cast(ties, dy.dtype), 0.5));
  const weightB = op.sub(1, weightA);
  return [
    needs[0] ? unbroadcast(op.mul(dy, weightA), a) : undefined,
    needs[1] ? unbroadcast(op.mul(dy, weightB), b) : undefined,
  ];
}

/** Slice with unit steps: pad the gradient back with zeros to the input's extent. */
function sliceGrad(n: Node, dy: Tensor): ReadonlyArray<Tensor | undefined> {
  const x = n.inputs[0]!;
  const starts = constantInts(n.inputs[1]);
  const ends = constantInts(n.inputs[2]);
  const axes = constantInts(n.inputs[3]) ?? starts?.map((_, i) => i);
  const steps = constantInts(n.inputs[4]) ?? axes?.map(() => 1);
  if (!starts || !ends || !axes || !steps)
    throw new Error(`no gradient rule for Slice with bounds computed at run time (node ${n.name})`);
  if (steps.some((s) => s !== 1))
    throw new Error(`no gradient rule for Slice with steps other than 1 (node ${n.name})`);
  const g = x.graph;
  const rank = x.rank;
  const before: Array<number | Tensor> = new Array(rank).fill(0);
  const after: Array<number | Tensor> = new Array(rank).fill(0);
  axes.forEach((rawAxis, i) => {
    const axis = normalizeAxis(rawAxis, rank);
    const d: Dim = x.shape[axis];
    if (typeof d === 'number') {
      const clamp = (v: number) => Math.min(Math.max(v < 0 ? v + d : v, 0), d);
      const s = clamp(starts[i]);
      const e = Math.max(clamp(ends[i]), s);
      before[axis] = s;
      after[axis] = d - e;
    } else {
      // Unknown extent: begin/end from the run-time size (for non-negative starts and ends).
      if (starts[i] < 0 || ends[i] < 0)
        throw new Error(
          `no gradient rule for Slice with negative bounds on the symbolic axis ${axis} (node ${n.name})`,
        );
      const size = op.shapeOf(x, axis, axis + 1);
      const end = op.minimum(size, g.int64s([Math.min(ends[i], Number.MAX_SAFE_INTEGER)]));
      const start = op.minimum(end, g.int64s([starts[i]]));
      before[axis] = start;
      after[axis] = op.sub(size, end);
    }
  });
  const pads =
    before.every((p) => typeof p === 'number') && after.every((p) => typeof p === 'number')
      ? g.int64s([...(before as number[]), ...(after as number[])])
      : op.concat(
          [...before, ...after].map((p) => (typeof p === 'number' ? g.int64s([p]) : p)),
          0,
        );
  return [op.pad(dy, pads, x.shape), undefined, undefined, undefined, undefined];
}

/** `t` recomputed from its graph input's twin: the input itself, or a Slice of it; else `t`. */
function fromTwin(t: Tensor): Tensor {
  if (t.kind === 'input') return t.graph.inputTwin(t);
  const slice = t.producer;
  const source = slice?.inputs[0];
  if (slice?.opType !== 'Slice' || source?.kind !== 'input') return t;
  const twin = t.graph.inputTwin(source);
  return t.graph.addNode('Slice', [twin, ...slice.inputs.slice(1)], [{ dtype: t.dtype, shape: t.shape }])[0];
}
