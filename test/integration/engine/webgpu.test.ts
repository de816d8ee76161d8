/**
 * The engine's graphs on the WebGPU execution provider (Mesa lavapipe in CI: a Vulkan driver
 * on the CPU) agree with the CPU provider, and training with parameters and optimizer moments
 * resident on the device follows the CPU run.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { createDevice } from '../../../trainer/engine/device/device';
import { momentName } from '../../../trainer/engine/optimizer';
import { seeded } from '../../helpers/engine';
import { initTinyLm, lmBatch, tinyLmOptimizer, type TinyLmConfig } from '../../helpers/tinyLm';

const config: TinyLmConfig = { vocab: 17, hidden: 32, layers: 1, heads: 4, kvHeads: 2, ffn: 48 };
const STEPS = 4;

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe('WebGPU provider', () => {
  it('trains with device-resident parameters and follows the CPU run to 1e-4', async () => {
    const init = initTinyLm(config, seeded(1));
    const r = seeded(2);
    const batch = lmBatch(Array.from({ length: 2 }, () => Array.from({ length: 10 }, () => Math.floor(r() * config.vocab))));
    const runs: Record<string, { losses: number[]; norms: number[]; params: Record<string, { data: unknown }> }> = {};
    for (const provider of ['cpu', 'webgpu'] as const) {
      const device = createDevice(provider);
      try {
        const runner = await tinyLmOptimizer(device, config, init);
        const losses: number[] = [];
        const norms: number[] = [];
        for (let s = 0; s < STEPS; s++) {
          const step = await runner.step(batch, 1e-2);
          losses.push(step.loss);
          norms.push(step.gradNorm);
        }
        if (provider === 'webgpu') {
          const info = await device.stateInfo([init[0].name, momentName(init[0].name, 'm')]);
          assert.equal(info[init[0].name].location, 'gpu-buffer', 'parameters stay on the device between steps');
          assert.equal(info[momentName(init[0].name, 'm')].location, 'gpu-buffer', 'moments stay on the device between steps');
        }
        runs[provider] = { losses, norms, params: await runner.parameters() };
      } finally {
        await device.close();
      }
    }
    const { cpu, webgpu } = runs;
    assert.ok(cpu.losses[STEPS - 1] < cpu.losses[0], 'the run learns');
    assert.ok(maxDiff(cpu.losses, webgpu.losses) < 1e-4, `losses: ${cpu.losses} vs ${webgpu.losses}`);
    assert.ok(maxDiff(cpu.norms, webgpu.norms) < 1e-4 * Math.max(...cpu.norms), `grad norms: ${cpu.norms} vs ${webgpu.norms}`);
    for (const name of Object.keys(cpu.params)) {
      const d = maxDiff(cpu.params[name].data as Float32Array, webgpu.params[name].data as Float32Array);
      assert.ok(d < 1e-4, `${name}: parameters differ by ${d}`);
    }
  });
});
