import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { grad } from '#trainer/foundations/engine/autodiff';
import { Graph, GraphBuildError } from '#trainer/foundations/engine/graph';
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
