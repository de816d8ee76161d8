import { isFloat } from './dtype';
import { GraphBuildError, type Node, type Tensor } from './graph';
import { add } from './ops/elementwise';
import { fullLike } from './ops/layout';
import { SegmentRecomputation } from './recompute';
import { formatShape } from './shape';
import { VJP_RULES, NON_DIFFERENTIABLE } from './vjp';

/**
 * Reverse-mode automatic differentiation on the graph: `grad(loss, wrt)` adds the backward
 * pass as ordinary ONNX nodes (in scope `grad/…`) and returns d loss / d wrt for each tensor
 * of `wrt`, in order. `loss` must be a floating-point scalar unless `seed` (the gradient of
 * some scalar with respect to `loss`, shaped like it) is given.
 *
 * Only nodes on a path from `wrt` to `loss` are differentiated; integer tensors, shapes and
 * stop-gradient points carry no gradient; fan-out accumulates by addition; a node with no
 * rule fails loudly, naming the op and its scope.
 *
 * Nodes built under `Graph.checkpoint` are differentiated from a recomputation of their segment
 * (recompute.ts): their rules read copies fed from the segment's inputs, not the forward's values.
 */
export function grad(loss: Tensor, wrt: readonly Tensor[], options: { seed?: Tensor } = {}): Tensor[] {
  const g = loss.graph;
  if (!isFloat(loss.dtype))
    throw new GraphBuildError(`grad: the loss ${loss.name} must be floating point, got ${loss.dtype}`);
  if (!options.seed && loss.rank !== 0)
    throw new GraphBuildError(
      `grad: the loss ${loss.name} must be a scalar (shape ${formatShape(loss.shape)}); reduce it or pass a seed`,
    );
  for (const t of wrt) if (t.graph !== g) throw new GraphBuildError(`grad: ${t.name} belongs to another graph`);

  // Tensors that depend on some `wrt` (forward sweep) …
  const dependsOnWrt = new Set<Tensor>(wrt);
  for (const node of g.nodes) {
    if (node.inputs.some((t) => t && dependsOnWrt.has(t)) && !node.outputs.some((o) => g.noGradient.has(o))) {
      for (const o of node.outputs) if (isFloat(o.dtype)) dependsOnWrt.add(o);
    }
  }
  // … and nodes the loss depends on (backward sweep from the loss).
  const neededForLoss = new Set<Node>();
  const pending: Tensor[] = [loss];
  const seen = new Set<Tensor>();
  while (pending.length) {
    const t = pending.pop()!;
    if (seen.has(t)) continue;
    seen.add(t);
    if (t.producer && !neededForLoss.has(t.producer)) {
      neededForLoss.add(t.producer);
      for (const i of t.producer.inputs) if (i) pending.push(i);
    }
  }

  const grads = new Map<Tensor, Tensor>();
  const accumulate = (t: Tensor, dt: Tensor) => {
    const prior = grads.get(t);
    grads.set(t, prior ? add(prior, dt) : dt);
  };
  grads.set(loss, options.seed ?? g.scalar(1, loss.dtype));
  const segments = g.checkpoints.map((range) => new SegmentRecomputation(g, range));
  let segment = segments.length - 1;

  for (let n = g.nodes.length - 1; n >= 0; n--) {
    const node = g.nodes[n];
    if (!neededForLoss.has(node)) continue;
    const outGrads = node.outputs.map((o) => grads.get(o));
    if (outGrads.every((x) => x === undefined)) continue;
    if (node.outputs.some((o) => g.noGradient.has(o))) continue;
    const needs = node.inputs.map((t) => !!t && isFloat(t.dtype) && dependsOnWrt.has(t));
    if (!needs.some(Boolean)) continue;
    if (NON_DIFFERENTIABLE.has(node.opType)) continue;
    const rule = VJP_RULES[node.opType];
    while (segment >= 0 && node.index < segments[segment].start) segment--;
    const recomputation = segment >= 0 && segments[segment].contains(node) ? segments[segment] : undefined;
    if (!rule) {
      throw new GraphBuildError(
        `grad: no gradient rule for ${node.opType} (node ${node.name}${node.scope ? ` in scope "${node.scope}"` : ''}); it lies between the loss and a differentiated input`,
      );
    }
    recomputation?.begin(outGrads.find((dy) => dy !== undefined)!);
    const read = recomputation ? recomputation.node(node) : node;
    const inputGrads = g.withScope('grad', () => g.withScope(node.scope || 'root', () => rule(read, outGrads, needs)));
    node.inputs.forEach((input, i) => {
      const dInput = inputGrads[i];
      if (input && needs[i] && dInput) accumulate(input, dInput);
    });
  }
  return wrt.map((t) => grads.get(t) ?? g.withScope('grad', () => fullLike(t, 0)));
}
