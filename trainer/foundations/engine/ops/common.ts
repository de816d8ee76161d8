import { type DType, isFloat } from '../dtype';
import { GraphBuildError, type Graph, type Tensor } from '../graph';
import { broadcastShapes, formatShape, type Dim } from '../shape';

export type Operand = Tensor | number;

/** Throw a build error naming the op, the scope and the shapes involved. */
export function fail(op: string, graph: Graph, detail: string, ...tensors: Tensor[]): never {
  const where = graph.scope ? ` in scope "${graph.scope}"` : '';
  const shapes = tensors.length
    ? `; ${tensors.map((t) => `${t.name}: ${t.dtype}${formatShape(t.shape)}`).join(', ')}`
    : '';
  throw new GraphBuildError(`${op}${where}: ${detail}${shapes}`);
}

/** The graph of the first tensor among the operands. */
export function graphOf(op: string, ...operands: Operand[]): Graph {
  const t = operands.find((o): o is Tensor => typeof o !== 'number');
  if (!t) throw new GraphBuildError(`${op}: at least one operand must be a tensor`);
  return t.graph;
}

/** Numbers become scalar constants of the tensor operand's dtype. */
export function lift(op: string, a: Operand, b: Operand): [Tensor, Tensor] {
  const g = graphOf(op, a, b);
  const dtype = (typeof a !== 'number' ? a : (b as Tensor)).dtype;
  const ta = typeof a === 'number' ? g.scalar(a, dtype) : a;
  const tb = typeof b === 'number' ? g.scalar(b, dtype) : b;
  return [ta, tb];
}

export function requireSameDtype(op: string, ...tensors: Tensor[]): DType {
  const dtype = tensors[0].dtype;
  for (const t of tensors)
    if (t.dtype !== dtype)
      fail(op, t.graph, `operands must have one dtype, got ${tensors.map((x) => x.dtype).join(' and ')}`, ...tensors);
  return dtype;
}

export function requireFloat(op: string, t: Tensor): void {
  if (!isFloat(t.dtype)) fail(op, t.graph, `expects a floating-point tensor, got ${t.dtype}`, t);
}

export function requireInteger(op: string, t: Tensor): void {
  if (t.dtype !== 'int64' && t.dtype !== 'int32')
    fail(op, t.graph, `expects int64 or int32 indices, got ${t.dtype}`, t);
}

export function broadcast(op: string, ...tensors: Tensor[]): Dim[] {
  let shape: readonly Dim[] = tensors[0].shape;
  for (const t of tensors.slice(1)) {
    const result = broadcastShapes(shape, t.shape);
    if (typeof result === 'string') fail(op, t.graph, `shapes do not broadcast: ${result}`, ...tensors);
    shape = result;
  }
  return [...shape];
}

/** Values of a constant 1-D int64 tensor known at build time, or undefined. */
export function constantInts(t: Tensor | undefined): number[] | undefined {
  if (!t?.value) return undefined;
  return Array.from(t.value as ArrayLike<number | bigint>, Number);
}

let unknownCounter = 0;
/** A fresh symbol for a size the builder cannot know (e.g. a reshape to a runtime shape). */
export function unknownDim(): string {
  return `?${unknownCounter++}`;
}
