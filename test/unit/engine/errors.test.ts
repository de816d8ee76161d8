import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { createDevice } from '#trainer/foundations/engine/device/device';
import { Graph, GraphBuildError } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { serializeGraph } from '#trainer/foundations/engine/serialize';

describe('build-time checks', () => {
  it('a shape mismatch names the op, the scope and both shapes', () => {
    const g = new Graph('m');
    const x = g.input('x', 'float32', ['B', 3]);
    const w = g.input('w', 'float32', [4, 5]);
    assert.throws(
      () => g.withScope('layers.2', () => g.withScope('mlp', () => op.matmul(x, w))),
      (e: unknown) =>
        e instanceof GraphBuildError &&
        e.message ===
          'MatMul in scope "layers.2/mlp": inner dimensions differ (3 vs 4); x: float32[B, 3], w: float32[4, 5]',
    );
  });

  it('a broadcast that cannot work names both shapes', () => {
    const g = new Graph('m');
    assert.throws(
      () => op.add(g.input('a', 'float32', [2, 3]), g.input('b', 'float32', [4])),
      /Add: shapes do not broadcast: dimension 1 is 3 in one and 4 in the other; a: float32\[2, 3\], b: float32\[4\]/,
    );
  });

  it('a dtype mismatch names both dtypes', () => {
    const g = new Graph('m');
    assert.throws(
      () => op.mul(g.input('a', 'float32', [2]), g.input('b', 'float64', [2])),
      /Mul: operands must have one dtype, got float32 and float64/,
    );
  });

  it('a reshape that cannot hold the elements says so', () => {
    const g = new Graph('m');
    assert.throws(
      () => op.reshape(g.input('a', 'float32', [2, 3]), [4, -1]),
      /Reshape: 6 elements do not split into \[4,-1\]/,
    );
  });

  it('symbolic dimensions flow through reshape', () => {
    const g = new Graph('m');
    const x = g.input('x', 'float32', ['B', 'T', 8]);
    const flat = op.reshape(x, [-1, 8]);
    assert.deepEqual(flat.shape, ['B*T', 8]);
    assert.deepEqual(op.reshape(x, ['B', 'T', 2, 4]).shape, ['B', 'T', 2, 4]);
    assert.deepEqual(op.reshape(op.reshape(x, ['B', 'T', 2, 4]), ['B', 2, 'T', 4]).shape, ['B', 2, 'T', 4]);
  });
});

describe('execution providers', () => {
  it('a missing provider fails with a message naming what is missing and what to do', async () => {
    const g = new Graph('m');
    g.output(op.exp(g.input('x', 'float32', [2])), 'y');
    const device = createDevice('cuda', { worker: false });
    await assert.rejects(device.load({ model: serializeGraph(g), settings: {} }), (e: Error) => {
      assert.match(e.message, /^The cuda execution provider is not available: /);
      assert.match(e.message, /CUDA provider libraries are not installed|NVIDIA|CUDA/);
      assert.match(e.message, /rollout-studio env/);
      return true;
    });
    await device.close();
  });
});
