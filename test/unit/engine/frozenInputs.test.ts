import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { Graph } from '#trainer/foundations/engine/graph';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { linear } from '#trainer/foundations/models/layers/linear';

const IN = 3;
const OUT = 2;

/** y = x·Wᵀ + b, with W and b graph inputs (as our weights are). */
function affineGraph() {
  const g = new Graph('affine');
  const x = g.input('x', 'float32', ['M', IN]);
  const y = linear(x, g.input('w', 'float32', [OUT, IN]), g.input('b', 'float32', [OUT]));
  g.output(y, 'y');
  return serializeGraph(g);
}

const tensor = (shape: number[], values: number[]): HostTensor => ({
  dtype: 'float32',
  shape,
  data: Float32Array.from(values),
});
const x = tensor([2, IN], [1, 2, 3, -1, 0, 4]);
const w1 = tensor([OUT, IN], [1, 0, 0, 0, 1, 1]);
const w2 = tensor([OUT, IN], [2, 0, 0, 0, 0, -1]);
const bias = tensor([OUT], [0.5, -0.5]);
const feeds = { x, w: { state: 'weight' }, b: { state: 'bias' } };

async function run(device: Device, session: number): Promise<number[]> {
  const { y } = await device.run(session, feeds, { y: 'return' });
  return [...(y.data as Float32Array)];
}

describe('frozen inputs (state read as initializers)', () => {
  for (const worker of [false, true])
    it(`compute what the same inputs fed give, and follow a replaced state (${worker ? 'worker' : 'in-process'} device)`, async () => {
      const device = createDevice('cpu', { worker, threads: 1 });
      try {
        await device.setState({ weight: w1, bias });
        const model = affineGraph();
        const fed = await device.load({ model, settings: {} });
        const frozen = await device.load({ model, settings: {}, frozenInputs: { w: 'weight' } });
        assert.notEqual(frozen, fed, 'a frozen load is a session of its own');
        // x·W1ᵀ + b = [1+0.5, 2+3-0.5] and [-1+0.5, 0+4-0.5]
        assert.deepEqual(await run(device, frozen), [1.5, 4.5, -0.5, 3.5]);
        assert.deepEqual(await run(device, frozen), await run(device, fed));
        // An update replaces the state: the frozen session is built again, never stale.
        await device.setState({ weight: w2 });
        assert.deepEqual(await run(device, frozen), [2.5, -3.5, -1.5, -4.5]);
        assert.deepEqual(await run(device, frozen), await run(device, fed));
      } finally {
        await device.close();
      }
    });

  it('refuse a feed naming another state, a missing state, and a shape that does not fit', async () => {
    const device = createDevice('cpu', { worker: false, threads: 1 });
    try {
      await device.setState({ weight: w1, bias, other: w2, wide: tensor([OUT, IN + 1], [1, 2, 3, 4, 5, 6, 7, 8]) });
      const model = affineGraph();
      const frozen = await device.load({ model, settings: {}, frozenInputs: { w: 'weight' } });
      await assert.rejects(
        device.run(frozen, { ...feeds, w: { state: 'other' } }, { y: 'return' }),
        /feed w: the session reads it from state "weight" and cannot take another value/,
      );
      await assert.rejects(
        device.load({ model, settings: {}, frozenInputs: { w: 'missing' } }),
        /frozen input w: no state named "missing" on the device/,
      );
      await assert.rejects(
        device.load({ model, settings: {}, frozenInputs: { w: 'wide' } }),
        /frozen input w: the graph declares float32\[2, 3\], but state "wide" is float32\[2, 4\]/,
      );
      await assert.rejects(
        device.load({ model, settings: {}, frozenInputs: { nothing: 'weight' } }),
        /frozen input nothing: the graph affine has no input of that name/,
      );
      // A frozen state deleted after the load: the next run says which.
      await device.deleteState(['weight']);
      await assert.rejects(run(device, frozen), /frozen input w: no state named "weight" on the device/);
    } finally {
      await device.close();
    }
  });
});
