/**
 * The rules for bad values, on a tiny real model:
 * - a reward that is NaN, ±Infinity or beyond ±1e6 (1e300 used to make every advantage 0, silently)
 *   fails the run at once, naming the reward, the trajectory, its dataset row and the value; the
 *   steps before stay complete;
 * - an update that would make the weights overflow (lr 1e30) is skipped in-graph and recorded, and
 *   three in a row stop the run (training.test.ts);
 * - an update that gets through but leaves a policy whose log-probs are not finite (a learning rate
 *   far too high) stops the run before the weights reach a rollout or a checkpoint, naming the
 *   last good checkpoint.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

/**
 * Rewards that differ between trajectories, so that the updates have something to do: the sum of
 * a trajectory's token ids, scaled into [0, 1). (The sum modulo 7 tied both samples of step 1 on
 * the multi-hop example's current world — a one-in-seven chance — and a tied group has no
 * advantage, so no update, and nothing diverged.)
 */
const VARIED = "{ outcome: [{ name: 'varied', score: (t) => t.ids.reduce((a, b) => a + b, 0) / 1e7 }] }";

async function train(name: string, overrides: Record<string, string>) {
  const config = fixture.writeConfig(`${name}.config.ts`, {
    sft: '',
    evaluation: '',
    data: "{ train: 'data/train.jsonl', fields: MultihopFields }",
    steps: '3',
    algorithm: "{ name: 'grpo', groupSize: 2 }",
    rollout:
      '{ promptsPerStep: 1, budget: { maxTurns: 2, maxNewTokensPerTurn: 16, maxTotalTokens: 640, maxToolResultTokens: 64 }, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }',
    rewards: VARIED,
    ...overrides,
  });
  const runDir = path.join(fixture.dir, 'runs', name);
  const result = await new TrainingRun(await loadConfig(config), { inProcessDevice: true, runDir })
    .run()
    .catch((error: Error) => error);
  return { result, runDir, reader: new RunStoreReader(runDir) };
}

describe('bad values', { timeout: 300_000 }, () => {
  for (const [label, value, said] of [
    ['NaN', 'Number.NaN', 'NaN; rewards must be finite numbers'],
    ['-Infinity', '-Infinity', '-Infinity; rewards must be finite numbers'],
    ['1e300', '1e300', '1e\\+300; rewards must lie within ±1e\\+6'],
  ] as const) {
    it(`a reward of ${label} in step 2 fails the run naming the reward, the row and the value`, async () => {
      // Step 1 scores two trajectories; the third trajectory scored is step 2's first.
      const { result, reader } = await train(`reward-${label}`, {
        rewards: `{ outcome: [{ name: 'judge', score: (() => { let n = 0; return () => (++n === 3 ? ${value} : 0.5); })() }] }`,
      });
      assert.ok(result instanceof Error, 'the run failed');
      assert.match(
        result.message,
        new RegExp(
          `^outcome reward "judge" on trajectory 0 \\(.*train\\.jsonl:\\d+ \\(row train-\\d{4}\\)\\) returned ${said}`,
        ),
      );
      assert.equal(reader.run().lastStep, 1, 'step 1 is complete');
      const run = reader.run();
      assert.equal(run.status, 'failed');
      assert.equal(run.error!.message, result.message);
      // Every step before it is complete, and nothing of the failed step was recorded.
      const steps = reader
        .metrics()
        .records.filter((m) => m.kind === 'train')
        .map((m) => m.step);
      assert.deepEqual(
        steps,
        Array.from({ length: run.lastStep ?? 0 }, (_, i) => i + 1),
      );
      assert.deepEqual(reader.steps(), steps);
    });
  }

  it('an update that leaves the policy non-finite stops the run before a rollout or a checkpoint sees it', async () => {
    const { result, reader } = await train('diverged', {
      optimization: '{ lr: 1e15, maxGradNorm: 0, microBatchSize: 8 }',
    });
    assert.ok(!(result instanceof Error), String(result));
    const run = reader.run();
    assert.equal(run.status, 'failed');
    assert.match(
      run.error!.message,
      /^the update of step 1 \(lr 1000000000000000\) made the policy's log-probs non-finite: training diverged\. .* The last good checkpoint is checkpoints\/step-000000\.$/,
    );
    assert.equal(run.lastCheckpoint, 'checkpoints/step-000000');
    assert.deepEqual(reader.checkpoints(), ['checkpoints/step-000000'], 'the diverged weights were not saved');
    const [step1] = reader.metrics().records.filter((m) => m.kind === 'train');
    assert.equal(step1.values['logprob/after_update'], null);
    assert.ok(step1.nonFinite?.includes('logprob/after_update'), 'the check is recorded as non-finite');
    assert.deepEqual(reader.steps(), [1], 'no rollout ran with the diverged weights');
  });
});
