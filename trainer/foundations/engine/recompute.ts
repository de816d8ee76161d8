import { isFloat } from './dtype';
import type { Graph, Node, Tensor } from './graph';
import * as op from './ops';

/** Ops whose output depends only on their input's shape. */
const SHAPE_OPS = new Set(['Shape', 'Size']);

/**
 * The backward pass's second forward through one checkpointed segment (Graph.checkpoint).
 *
 * `node(n)` gives the node a gradient rule should read in place of `n`: a copy whose inputs are
 * recomputed, so the forward's own values inside the segment are dead once the forward has used
 * them and onnxruntime frees them. Rules:
 * - A value from outside the segment (its inputs: the residual stream, rotary tables, the mask) is
 *   read as the forward left it; it stays alive until the backward, as it would anyway.
 * - A node is copied only when it depends on such a value (an activation). Nodes of graph inputs
 *   and constants alone (a reshaped adapter, a sliced block of codes) are read as they are:
 *   copying them would recompute nothing per token. Nor are shapes (Shape, Size) and what is
 *   computed from them: a copy has its original's shape, and the forward's few integers cost
 *   nothing to keep, where copies would be more nodes for onnxruntime to plan.
 * - Each float value read from outside passes through a gate, x + 0·g, where g is one element of
 *   the gradient that reached the segment. The gate changes no value (0·g = ±0 for every finite g;
 *   a non-finite g makes the gradients non-finite, and the update is skipped as it would be), but it
 *   makes every copy depend on the backward having reached the segment. Without it onnxruntime
 *   would be free to run the copies during the forward — keeping them alive as long as the
 *   originals — and its common-subexpression pass would merge each copy into the node it copies.
 * - A rule may leave a copy unread (an Add's rule needs no values); serializeGraph leaves out nodes
 *   no output depends on.
 */
export class SegmentRecomputation {
  private readonly copies = new Map<Node, Node>();
  private readonly gated = new Map<Tensor, Tensor>();
  private trigger: Tensor | undefined;

  constructor(
    private readonly g: Graph,
    private readonly range: { start: number; end: number },
  ) {}

  /** The index of the segment's first node. */
  get start(): number {
    return this.range.start;
  }

  contains(n: Node): boolean {
    return n.index >= this.range.start && n.index < this.range.end;
  }

  /**
   * Start recomputing once the backward reaches the segment, gated on `dy`: a gradient flowing
   * into the segment's outputs. Called before the first `node`.
   */
  begin(dy: Tensor): void {
    if (this.trigger) return;
    this.trigger = this.g.withScope('recompute', () => {
      const first = op.slice(op.reshape(dy, [-1]), { starts: [0], ends: [1], axes: [0] });
      return op.mul(first, 0);
    });
  }

  /** The node a rule reads for `n` (a node of the segment): its copy, or `n` where nothing in it is recomputed. */
  node(n: Node): Node {
    if (!this.trigger) throw new Error('SegmentRecomputation.node before begin');
    const known = this.copies.get(n);
    if (known) return known;
    // A copy has the shape of what it copies: read the forward's (a few integers, kept for nothing).
    if (SHAPE_OPS.has(n.opType)) return n;
    const inputs = n.inputs.map((t) => t && this.value(t));
    if (inputs.every((t, i) => t === n.inputs[i])) {
      this.copies.set(n, n);
      return n;
    }
    const outputs = this.g.withScope('recompute', () =>
      this.g.withScope(n.scope || 'root', () =>
        this.g.addNode(
          n.opType,
          inputs,
          n.outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
          { ...n.attributes },
          { domain: n.domain },
        ),
      ),
    );
    const copy = outputs[0].producer!;
    this.copies.set(n, copy);
    return copy;
  }

  /** `t` as the recomputation reads it. */
  private value(t: Tensor): Tensor {
    const producer = t.producer;
    if (!producer) return t; // a graph input or an initializer
    if (this.contains(producer)) return this.node(producer).outputs[producer.outputs.indexOf(t)];
    if (!isFloat(t.dtype)) return t;
    let gated = this.gated.get(t);
    if (!gated) {
      const zero = this.trigger!.dtype === t.dtype ? this.trigger! : op.cast(this.trigger!, t.dtype);
      gated = this.g.withScope('recompute', () => op.add(t, zero));
      this.gated.set(t, gated);
    }
    return gated;
  }
}
