import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { createDevice } from '#trainer/foundations/engine/device/device';
import {
  buildApplyGraph,
  DEFAULT_ADAMW,
  gradName,
  momentName,
  nextName,
  type AdamWConfig,
} from '#trainer/foundations/engine/optimizer';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { seeded } from '../../helpers/engine';
import { initTinyLm, lmBatch, tinyLmOptimizer, type TinyLmConfig } from '../../helpers/tinyLm';

/** AdamW exactly as PyTorch's torch.optim.AdamW steps it, in float64 JavaScript. */
function referenceAdamW(
  p: Float64Array,
  m: Float64Array,
  v: Float64Array,
  gradient: Float64Array,
  t: number,
  lr: number,
  c: AdamWConfig,
  decay: boolean,
): void {
  for (let i = 0; i < p.length; i++) {
    if (decay) p[i] *= 1 - lr * c.weightDecay;
    m[i] = c.beta1 * m[i] + (1 - c.beta1) * gradient[i];
    v[i] = c.beta2 * v[i] + (1 - c.beta2) * gradient[i] * gradient[i];
    const bc1 = 1 - c.beta1 ** t;
    const bc2 = 1 - c.beta2 ** t;
    p[i] -= (lr / bc1) * (m[i] / (Math.sqrt(v[i]) / Math.sqrt(bc2) + c.eps));
  }
}

/** torch.nn.utils.clip_grad_norm_: scale all gradients by min(1, max / (norm + 1e-6)). */
function referenceClip(grads: Float64Array[], maxNorm: number): { norm: number; clipped: Float64Array[] } {
  const norm = Math.sqrt(grads.reduce((a, g) => a + g.reduce((s, x) => s + x * x, 0), 0));
  const coef = Math.min(1, maxNorm / (norm + 1e-6));
  return { norm, clipped: grads.map((g) => g.map((x) => x * coef)) };
}

const f64 = (shape: number[], data: Float64Array): HostTensor => ({ dtype: 'float64', shape, data });
const scalar = (v: number): HostTensor => ({ dtype: 'float64', shape: [], data: Float64Array.of(v) });

describe('AdamW in the graph', () => {
  it('matches the PyTorch-style reference step by step, with clipping, decay masks and a skipped non-finite step', async () => {
    const config: AdamWConfig = { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1.0 };
    const specs = [
      { name: 'w', shape: [3, 4], decay: true },
      { name: 'b', shape: [4], decay: false },
    ];
    const graph = buildApplyGraph(specs, config, 'float64');
    const device = createDevice('cpu', { worker: false });
    const session = await device.load({ model: serializeGraph(graph), settings: { optimization: 'basic' } });
    const r = seeded(9);
    const ref = specs.map((s) => {
      const n = s.shape.reduce((a, b) => a * b, 1);
      return {
        ...s,
        p: Float64Array.from({ length: n }, () => r() - 0.5),
        m: new Float64Array(n),
        v: new Float64Array(n),
      };
    });
    const state = Object.fromEntries(
      ref.flatMap((s) => [
        [s.name, f64(s.shape, Float64Array.from(s.p))],
        [momentName(s.name, 'm'), f64(s.shape, new Float64Array(s.p.length))],
        [momentName(s.name, 'v'), f64(s.shape, new Float64Array(s.p.length))],
      ]),
    );
    let t = 0;
    for (let step = 1; step <= 6; step++) {
      // Step 3 has huge gradients (clipping active); step 5 has a NaN (must be skipped).
      const scale = step === 3 ? 50 : 0.3;
      const grads = ref.map((s) => Float64Array.from(s.p, () => (r() - 0.5) * scale));
      if (step === 5) grads[1][2] = NaN;
      const feeds: Record<string, HostTensor> = { step: scalar(t + 1), lr: scalar(1e-2), grad_scale: scalar(1) };
      ref.forEach((s, i) => {
        feeds[s.name] = state[s.name];
        feeds[momentName(s.name, 'm')] = state[momentName(s.name, 'm')];
        feeds[momentName(s.name, 'v')] = state[momentName(s.name, 'v')];
        feeds[gradName(s.name)] = f64(s.shape, grads[i]);
      });
      const outputs = Object.fromEntries([...graph.outputs.map((o) => [o.name, 'return' as const])]);
      const out = await device.run(session, feeds, outputs);
      const applied = Number(out.update_applied.data[0]) === 1;
      if (step === 5) {
        assert.equal(applied, false, 'a NaN gradient skips the update');
        ref.forEach((s) =>
          assert.deepEqual(
            Array.from(out[nextName(s.name)].data as Float64Array),
            Array.from(state[s.name].data as Float64Array),
          ),
        );
        continue;
      }
      assert.equal(applied, true);
      t++;
      const { norm, clipped } = referenceClip(grads, config.maxGradNorm!);
      assert.ok(
        Math.abs(Number(out.grad_norm.data[0]) - norm) < 1e-12 * Math.max(1, norm),
        `grad norm ${out.grad_norm.data[0]} vs ${norm}`,
      );
      ref.forEach((s, i) => {
        referenceAdamW(s.p, s.m, s.v, clipped[i], t, 1e-2, config, s.decay);
        const got = out[nextName(s.name)].data as Float64Array;
        const moved = Math.max(...Array.from(s.p, (x, j) => Math.abs(x - (state[s.name].data as Float64Array)[j])));
        const err = Math.max(...Array.from(s.p, (x, j) => Math.abs(x - got[j])));
        assert.ok(moved > 1e-4, 'the step moves the parameters');
        assert.ok(err < 1e-12, `${s.name} step ${step}: differs from the reference by ${err}`);
        state[s.name] = out[nextName(s.name)];
        state[momentName(s.name, 'm')] = out[nextName(momentName(s.name, 'm'))];
        state[momentName(s.name, 'v')] = out[nextName(momentName(s.name, 'v'))];
      });
    }
    await device.close();
  });

  it('two accumulated micro-batches then apply equal one step on the whole batch', async () => {
    const config: TinyLmConfig = { vocab: 13, hidden: 16, layers: 1, heads: 2, kvHeads: 1, ffn: 24, dtype: 'float64' };
    const init = initTinyLm(config, seeded(3));
    const r = seeded(4);
    const sequences = Array.from({ length: 4 }, () => Array.from({ length: 9 }, () => Math.floor(r() * 13)));
    const adamw = { ...DEFAULT_ADAMW, maxGradNorm: 0.5 };

    const fusedDevice = createDevice('cpu', { worker: false });
    const fused = await tinyLmOptimizer(fusedDevice, config, init, { adamw, optimization: 'basic' });
    const whole = await fused.step(lmBatch(sequences, 'float64'), 3e-3);
    const expected = await fused.parameters();
    await fusedDevice.close();

    const device = createDevice('cpu', { worker: false });
    const accumulating = await tinyLmOptimizer(device, config, init, {
      adamw,
      accumulate: true,
      optimization: 'basic',
    });
    const losses: number[] = [];
    for (const half of [sequences.slice(0, 2), sequences.slice(2)])
      losses.push((await accumulating.accumulate(lmBatch(half, 'float64'))).loss);
    // Each micro-batch's loss is its own mean, so the step's gradient is their average.
    const applied = await accumulating.apply(3e-3, 0.5);
    assert.ok(
      Math.abs((losses[0] + losses[1]) / 2 - whole.loss) < 1e-12,
      'the mean of the micro-batch losses is the batch loss',
    );
    assert.ok(applied.applied);
    assert.ok(
      Math.abs(applied.gradNorm - whole.gradNorm) < 1e-10,
      `grad norm ${applied.gradNorm} vs ${whole.gradNorm}`,
    );
    const got = await accumulating.parameters();
    for (const p of init) {
      const a = expected[p.name].data as Float64Array;
      const b = got[p.name].data as Float64Array;
      const err = Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i])));
      assert.ok(err < 1e-12, `${p.name}: accumulated update differs by ${err}`);
    }
    const accumulators = await device.getState([gradName(init[0].name)]);
    assert.ok(
      Array.from(accumulators[gradName(init[0].name)].data as Float64Array).every((x) => x === 0),
      'apply zeroes the accumulators',
    );
    assert.equal(accumulating.steps, 1);
    await device.close();
  });

  it('gives the same parameters in a worker thread as in this thread', async () => {
    const config: TinyLmConfig = { vocab: 11, hidden: 16, layers: 1, heads: 2, kvHeads: 2, ffn: 16 };
    const init = initTinyLm(config, seeded(5));
    const batch = lmBatch([
      [1, 2, 3, 4, 5, 6, 7, 8],
      [8, 7, 6, 5, 4, 3, 2, 1],
    ]);
    const results = [];
    for (const worker of [false, true]) {
      const device = createDevice('cpu', { worker });
      const runner = await tinyLmOptimizer(device, config, init);
      for (let s = 0; s < 3; s++) await runner.step(batch, 1e-2);
      results.push(await runner.parameters());
      await device.close();
    }
    for (const p of init) assert.deepEqual(results[1][p.name].data, results[0][p.name].data, p.name);
  });
});
