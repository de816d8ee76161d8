import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { grad } from '#trainer/foundations/engine/autodiff';
import { onnx } from 'onnx-proto';
import { Graph, GraphBuildError, type Tensor } from '#trainer/foundations/engine/graph';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import * as op from '#trainer/foundations/engine/ops';
import { runGraphOnce } from '#trainer/foundations/engine/runtime/run';
import { f64, seeded } from '../../helpers/engine';

describe('grad', () => {
  it('treats a stop-gradient point as a constant', async () => {
    const g = new Graph('stop');
    const a = g.input('a', 'float64', [4]);
    const loss = op.reduceSum(op.mul(a, op.exp(g.stopGradient(a))));
    const [da] = grad(loss, [a]);
    g.output(da, 'da');
    const feed = f64([4], seeded(3));
    const { da: out } = await runGraphOnce(g, { a: feed }, { provider: 'cpu', optimization: 'basic' });
    const x = feed.data as Float64Array;
    Array.from(out.data as Float64Array).forEach((v, i) => assert.ok(Math.abs(v - Math.exp(x[i])) < 1e-12));
  });

  it('returns zeros for an input the loss does not depend on', async () => {
    const g = new Graph('unused');
    const a = g.input('a', 'float64', [3]);
    const b = g.input('b', 'float64', [2, 2]);
    const [, db] = grad(op.reduceSum(op.exp(a)), [a, b]);
    g.output(db, 'db');
    const { db: out } = await runGraphOnce(
      g,
      { a: f64([3], seeded(1)), b: f64([2, 2], seeded(2)) },
      { provider: 'cpu' },
    );
    assert.deepEqual(out.shape, [2, 2]);
    assert.deepEqual(Array.from(out.data as Float64Array), [0, 0, 0, 0]);
  });

  it('fails loudly, naming the op and scope, when a node on the path has no rule', () => {
    const g = new Graph('norule');
    const a = g.input('a', 'float32', [3]);
    const y = g.withScope('block', () => g.addNode('Acos', [a], [{ dtype: 'float32', shape: [3] }])[0]);
    assert.throws(
      () => grad(op.reduceSum(y), [a]),
      (e: unknown) =>
        e instanceof GraphBuildError &&
        /no gradient rule for Acos \(node block\/Acos in scope "block"\)/.test(e.message),
    );
  });

  it('does not need a rule for nodes off the path to the inputs', () => {
    const g = new Graph('offpath');
    const a = g.input('a', 'float32', [3]);
    const c = g.input('c', 'float32', [3]);
    const erf = g.addNode('Acos', [c], [{ dtype: 'float32', shape: [3] }])[0];
    assert.doesNotThrow(() => grad(op.reduceSum(op.mul(a, erf)), [a]));
  });

  it('requires a scalar floating-point loss unless a seed is given', () => {
    const g = new Graph('loss');
    const a = g.input('a', 'float32', [3]);
    assert.throws(() => grad(op.exp(a), [a]), /must be a scalar \(shape \[3\]\)/);
    assert.doesNotThrow(() => grad(op.exp(a), [a], { seed: g.input('seed', 'float32', [3]) }));
    const ids = g.input('ids', 'int64', []);
    assert.throws(() => grad(ids, [a]), /must be floating point, got int64/);
  });

  it('puts backward nodes in grad/… scopes that mirror the forward scopes', () => {
    const g = new Graph('scopes');
    const a = g.input('a', 'float32', [3]);
    const y = g.withScope('layers.0', () => g.withScope('mlp', () => op.sigmoid(a)));
    grad(op.reduceSum(y), [a]);
    assert.ok(
      g.nodes.some((n) => n.name.startsWith('grad/layers.0/mlp/')),
      g.dump(),
    );
  });
});

describe('gradient checkpointing (Graph.checkpoint)', () => {
  /** Two checkpointed blocks h ↦ tanh(h·w)·h after exp(x); the loss and its gradients by w1 and w2. */
  const blocks = (checkpointed: boolean) => {
    const g = new Graph(checkpointed ? 'checkpointed' : 'plain');
    const x = g.input('x', 'float64', [3, 4]);
    const w1 = g.input('w1', 'float64', [4, 4]);
    const w2 = g.input('w2', 'float64', [4, 4]);
    const block = (h: Tensor, w: Tensor) => op.mul(op.tanh(op.matmul(h, w)), h);
    const wrap = (build: () => Tensor) => (checkpointed ? g.checkpoint(build) : build());
    const h = op.exp(x);
    const y = wrap(() => block(h, w1));
    const loss = op.reduceSum(wrap(() => block(y, w2)));
    const [d1, d2] = grad(loss, [w1, w2]);
    g.output(d1, 'd1');
    g.output(d2, 'd2');
    return g;
  };

  it('gives the same gradients, read from recomputed values', async () => {
    const r = seeded(5);
    const feeds = { x: f64([3, 4], r, 0.5), w1: f64([4, 4], r, 0.5), w2: f64([4, 4], r, 0.5) };
    const checkpointed = blocks(true);
    assert.equal(checkpointed.checkpoints.length, 2);
    assert.ok(
      checkpointed.nodes.some((n) => n.name.startsWith('recompute/')),
      'the backward recomputes',
    );
    const plain = await runGraphOnce(blocks(false), feeds, { provider: 'cpu', optimization: 'basic' });
    const ours = await runGraphOnce(checkpointed, feeds, { provider: 'cpu', optimization: 'all' });
    for (const name of ['d1', 'd2']) {
      const a = plain[name].data as Float64Array;
      const b = ours[name].data as Float64Array;
      a.forEach((v, i) => assert.ok(Math.abs(v - b[i]) <= 1e-12 * Math.max(1, Math.abs(v)), `${name}[${i}]`));
    }
  });

  it('refuses a checkpoint inside a checkpoint', () => {
    const g = new Graph('nested');
    const a = g.input('a', 'float32', [3]);
    assert.throws(
      () => g.checkpoint(() => g.withScope('outer', () => g.checkpoint(() => op.exp(a)))),
      /do not nest \(scope "outer"\)/,
    );
  });
});

describe('serializeGraph', () => {
  it('leaves out nodes no output depends on, and the constants only they read', () => {
    const g = new Graph('dead');
    const a = g.input('a', 'float32', [3]);
    g.output(op.exp(a), 'y');
    op.mul(op.sigmoid(a), g.constant([1, 2, 3], 'float32', [3], 'only_the_dead_read_me'));
    const model = serializeGraph(g);
    assert.equal(model.kind, 'bytes');
    const proto = onnx.ModelProto.decode(model.kind === 'bytes' ? model.bytes : new Uint8Array());
    assert.deepEqual(
      proto.graph!.node!.map((n) => n.opType),
      ['Exp', 'Identity'],
    );
    assert.deepEqual(
      proto.graph!.initializer!.map((i) => i.name),
      [],
    );
  });
});
