/**
 * Dynamic sampling on a tiny real model: groups whose rewards are all equal are dropped and
 * replaced by fresh prompts in extra rounds, recorded (marked) but not trained on; the step
 * records `health/dropped_groups` and its rounds; and a resumed run takes the same rows and
 * rounds as the uninterrupted one.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { RunStoreReader } from '#trainer/contract/runstore';
import type { TrajectoryRecord } from '#trainer/contract/protocol/runStore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

async function train(configFile: string, options: ConstructorParameters<typeof TrainingRun>[1]) {
  return new TrainingRun(await loadConfig(configFile), { inProcessDevice: true, ...options }).run();
}

/** Outcome rewards only (no process side), so the test decides which groups have signal. */
const rewardsWith = (score: string) =>
  `{ outcome: [{ name: 'exact_match', score: ${score} }], toolRewards: false, processWeight: 0 }`;
/** Rows whose id's character codes sum to an even number: the first sample scores 1, the others 0. Other rows: all 0 (no signal). */
const PARITY = '(t, row) => ([...row.id].reduce((a, c) => a + c.charCodeAt(0), 0) % 2 === 0 && t.sample === 0 ? 1 : 0)';

const base = {
  sft: '',
  evaluation: '{ samples: 2 }',
  rollout:
    '{ promptsPerStep: 3, budget: { maxTurns: 2, maxNewTokensPerTurn: 12, maxTotalTokens: 512, maxToolResultTokens: 32 }, systemPrompt: SYSTEM_PROMPT, templateKwargs: { enable_thinking: false } }',
};

const byGroup = (records: readonly TrajectoryRecord[]) => {
  const groups = new Map<number, TrajectoryRecord[]>();
  for (const r of records) groups.set(r.group, [...(groups.get(r.group) ?? []), r]);
  return groups;
};

describe('dynamic sampling in a training run', () => {
  it('a step whose groups all have equal rewards rolls out extra rounds, records the dropped groups, and trains on the first round', async () => {
    const config = fixture.writeConfig('flat.config.ts', {
      ...base,
      steps: '1',
      rewards: rewardsWith('() => 0'),
      algorithm:
        "{ name: 'grpo', groupSize: 2, epochs: 2, miniBatches: 2, dynamicSampling: { enabled: true, maxRounds: 3 } }",
      optimization: '{ lr: 1e-3, warmupSteps: 8, microBatchSize: 8 }',
    });
    const runDir = path.join(fixture.dir, 'runs', 'flat');
    const result = await train(config, { runDir });
    assert.equal(result.run.status, 'finished');
    const reader = new RunStoreReader(runDir);
    const metrics = reader.metrics().records.find((m) => m.kind === 'train' && m.step === 1)!.values;
    assert.equal(metrics['rollout/rounds'], 3, 'no group ever had signal: every round was rolled out');
    assert.equal(metrics['rollout/groups'], 9, 'a whole round each time: no share with signal to go by');
    assert.equal(metrics['health/dropped_groups'], 6 / 9, 'the extra rounds are dropped; the first is trained on');
    // The warm-up counts optimizer steps: the step's last of 2 epochs × 2 mini-batches is the 4th of 8.
    assert.equal(metrics['lr'], (1e-3 * 4) / 8);
    const records = reader.trajectories(1).records;
    assert.deepEqual(
      records.map((r) => r.index),
      Array.from({ length: 18 }, (_, i) => i),
      'numbered across rounds',
    );
    assert.deepEqual(
      records.map((r) => r.group),
      Array.from({ length: 18 }, (_, i) => Math.floor(i / 2)),
    );
    assert.deepEqual(
      records.map((r) => r.dropped),
      [...Array(6).fill(undefined), ...Array(12).fill('no_signal')],
    );
    assert.ok(
      records.slice(0, 6).every((r) => r.advantage === 0),
      'the trained groups have zero advantage',
    );
    assert.ok(
      records.slice(6).every((r) => r.advantage === undefined && r.tokens.advantages === undefined),
      'the dropped ones never reached the estimator',
    );
    assert.equal(new Set(records.map((r) => r.rowId)).size, 9, 'each round took fresh rows');
    // The update's tokens are the first round's only.
    const inLoss = records.slice(0, 6).reduce((n, r) => n + r.lengths.response, 0);
    assert.equal(metrics['tokens/in_loss'], inLoss);
  });

  it('drops exactly the groups without signal, trains on the ones with, and a resumed run continues identically', async (t) => {
    const config = fixture.writeConfig('parity.config.ts', {
      ...base,
      steps: '3',
      rewards: rewardsWith(PARITY),
      algorithm: "{ name: 'grpo', groupSize: 2, dynamicSampling: { enabled: true, maxRounds: 3 } }",
    });
    const straight = path.join(fixture.dir, 'runs', 'parity-straight');
    await train(config, { runDir: straight });
    const reader = new RunStoreReader(straight);
    let extraRounds = 0;
    for (const step of [1, 2, 3]) {
      const records = reader.trajectories(step).records;
      const metrics = reader.metrics().records.find((m) => m.kind === 'train' && m.step === step)!.values;
      const groups = byGroup(records);
      const trained = [...groups.values()].filter((g) => g[0].dropped === undefined);
      for (const members of groups.values()) {
        const signal = new Set(members.map((r) => r.rewards.outcome)).size > 1;
        assert.ok(
          members.every((r) => r.dropped === members[0].dropped),
          `step ${step}: a group is dropped or trained whole`,
        );
        if (members[0].dropped === 'no_signal')
          assert.ok(
            !signal,
            `step ${step}: group ${members[0].group} was dropped for no signal, but its rewards differ`,
          );
        if (members[0].dropped === undefined)
          assert.ok(
            signal || trained.every((g) => new Set(g.map((r) => r.rewards.outcome)).size === 1),
            `step ${step}: a trained group without signal, while others had some`,
          );
      }
      assert.ok(trained.length <= 3 && trained.length >= 1);
      assert.equal(metrics['rollout/groups'], groups.size);
      assert.equal(metrics['health/dropped_groups'], (groups.size - trained.length) / groups.size);
      assert.equal(
        metrics['tokens/in_loss'],
        trained.flat().reduce((n, r) => n + r.lengths.response, 0),
        'only the trained groups are in the update',
      );
      // The rollout metrics describe the first round: its promptsPerStep groups.
      const first = records.filter((r) => r.group < 3);
      assert.equal(metrics['reward/mean'], first.reduce((a, r) => a + r.rewards.total, 0) / first.length);
      extraRounds += (metrics['rollout/rounds'] ?? 1) - 1;
      t.diagnostic(
        `step ${step}: ${metrics['rollout/rounds']} round(s), ${groups.size} groups, ${trained.length} trained`,
      );
    }
    assert.ok(extraRounds > 0, 'about half the rows give no signal: some step needed another round');

    const interrupted = path.join(fixture.dir, 'runs', 'parity-interrupted');
    await train(config, { runDir: interrupted, steps: 1 });
    const resumed = await train(config, { resume: interrupted, steps: 3 });
    assert.equal(resumed.run.status, 'finished');
    const again = new RunStoreReader(interrupted);
    for (const step of [2, 3]) {
      const a = reader.metrics().records.find((m) => m.kind === 'train' && m.step === step)!.values;
      const b = again.metrics().records.find((m) => m.kind === 'train' && m.step === step)!.values;
      for (const key of [
        'rollout/rounds',
        'rollout/groups',
        'health/dropped_groups',
        'reward/mean',
        'loss/total',
        'grad/norm',
        'lr',
      ])
        assert.equal(b[key], a[key], `step ${step} ${key}`);
      const ta = reader.trajectories(step).records;
      const tb = again.trajectories(step).records;
      assert.deepEqual(
        tb.map((t) => [t.rowId, t.dropped, t.tokens.ids]),
        ta.map((t) => [t.rowId, t.dropped, t.tokens.ids]),
        `step ${step}: the same rows, rounds and tokens`,
      );
    }
    const weightsA = CheckpointReader.open(path.join(straight, 'checkpoints/step-000003'));
    const weightsB = CheckpointReader.open(path.join(interrupted, 'checkpoints/step-000003'));
    for (const name of weightsA.names()) assert.deepEqual(weightsB.read(name), weightsA.read(name), name);
    weightsA.close();
    weightsB.close();
  });

  it('is refused where equal rewards still carry signal (PPO, REINFORCE++)', async () => {
    const config = fixture.writeConfig('ppo-ds.config.ts', {
      ...base,
      steps: '1',
      algorithm: "{ name: 'reinforce++', groupSize: 2, dynamicSampling: { enabled: true } }",
    });
    await assert.rejects(
      loadConfig(config),
      /algorithm\.dynamicSampling: reinforce\+\+ learns from groups whose rewards are all equal/,
    );
  });
});
