/**
 * Training runs on a tiny real model, end to end: SFT warm start, evaluation, GRPO steps, the
 * run store, checkpoints; resuming after step k continues exactly as the uninterrupted run;
 * non-finite updates are skipped, recorded, and stop the run after a few in a row.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

async function train(configFile: string, options: ConstructorParameters<typeof TrainingRun>[1]) {
  return new TrainingRun(await loadConfig(configFile), { inProcessDevice: true, ...options }).run();
}

describe('a training run', () => {
  it('warm-starts, evaluates, trains and records everything in the run store', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'complete');
    const result = await train(fixture.configFile, { runDir });
    assert.equal(result.run.status, 'finished');
    assert.ok(result.evalBefore && result.evalAfter);
    const reader = new RunStoreReader(runDir);
    const run = reader.run();
    assert.equal(run.lastStep, 3);
    assert.equal(run.lastCheckpoint, 'checkpoints/step-000003');
    assert.equal(run.algorithm, 'grpo');
    assert.ok(run.model.trainableParameters > 0);
    const metrics = reader.metrics().records;
    assert.ok(metrics.some((m) => m.kind === 'sft' && m.values['loss/sft'] !== null));
    assert.deepEqual(
      metrics.filter((m) => m.kind === 'eval').map((m) => m.step),
      [0, 3],
    );
    assert.deepEqual(
      metrics.filter((m) => m.kind === 'train').map((m) => m.step),
      [1, 2, 3],
    );
    for (const m of metrics.filter((m) => m.kind === 'train')) {
      for (const key of [
        'reward/mean',
        'loss/total',
        'grad/norm',
        'lr',
        'length/response_mean',
        'tools/calls_per_trajectory',
        'time/rollout_s',
        'time/update_s',
      ]) {
        assert.equal(typeof m.values[key], 'number', `step ${m.step}: ${key}`);
      }
    }
    assert.deepEqual(reader.steps(), [1, 2, 3]);
    // The task metric: the config names none, so it is its first outcome reward.
    assert.equal(run.metric, 'exact_match');
    for (const m of metrics.filter((m) => m.kind !== 'sft'))
      assert.equal(typeof m.values['score/exact_match'], 'number', `${m.kind} ${m.step}: score/exact_match`);
    assert.equal(result.evalAfter!.metric, 'exact_match');
    assert.equal(
      result.evalAfter!.score,
      metrics.find((m) => m.kind === 'eval' && m.step === 3)!.values['score/exact_match'],
    );
    // Each evaluation's trajectories, one per held-out row, beside the training steps.
    assert.deepEqual(reader.evaluations(), [0, 3]);
    for (const step of [0, 3]) {
      const evaluated = reader.evaluationTrajectories(step).records;
      assert.deepEqual(
        evaluated.map((t) => [t.step, t.index, t.advantage]),
        Array.from({ length: 6 }, (_, i) => [step, i, undefined]),
      );
      const recorded = evaluated.reduce((a, t) => a + (t.rewards.components['exact_match'] ?? 0), 0) / evaluated.length;
      assert.equal(
        recorded,
        metrics.find((m) => m.kind === 'eval' && m.step === step)!.values['score/exact_match'],
        'the recorded evaluation is the one scored',
      );
    }
    const trajectories = reader.trajectories(2).records;
    assert.equal(trajectories.length, 8, '2 prompts × groups of 4');
    assert.ok(trajectories.every((t) => t.tokens.pieces.length === t.lengths.total));
    assert.deepEqual(reader.checkpoints(), [
      'checkpoints/step-000001',
      'checkpoints/step-000002',
      'checkpoints/step-000003',
    ]);
    const state = JSON.parse(fs.readFileSync(path.join(runDir, 'checkpoints/step-000003/trainer_state.json'), 'utf8'));
    assert.equal(state.step, 3);
    assert.equal(state.weights, 'full');
    assert.ok(fs.existsSync(path.join(runDir, 'checkpoints/step-000003/model.safetensors')));
  });

  it('resumed after step 2, steps 3 and 4 equal the uninterrupted run exactly', async () => {
    const config = fixture.writeConfig('resume.config.ts', { steps: '4', sft: '', evaluation: '{ samples: 2 }' });
    const straight = path.join(fixture.dir, 'runs', 'straight');
    await train(config, { runDir: straight });
    const interrupted = path.join(fixture.dir, 'runs', 'interrupted');
    await train(config, { runDir: interrupted, steps: 2 });
    // A crash after the checkpoint would leave records of a later step behind: resume drops them.
    const resumed = await train(config, { resume: interrupted, steps: 4 });
    assert.equal(resumed.run.status, 'finished');
    const pick = (dir: string) => new RunStoreReader(dir).metrics().records.filter((m) => m.kind === 'train');
    const a = pick(straight);
    const b = pick(interrupted);
    assert.deepEqual(
      b.map((m) => m.step),
      [1, 2, 3, 4],
    );
    for (const step of [3, 4]) {
      const x = a.find((m) => m.step === step)!.values;
      const y = b.find((m) => m.step === step)!.values;
      for (const key of [
        'reward/mean',
        'loss/total',
        'loss/policy',
        'grad/norm',
        'length/response_mean',
        'entropy/mean',
      ])
        assert.equal(y[key], x[key], `step ${step} ${key}`);
    }
    const trajectoriesA = new RunStoreReader(straight).trajectories(4).records;
    const trajectoriesB = new RunStoreReader(interrupted).trajectories(4).records;
    assert.deepEqual(
      trajectoriesB.map((t) => t.tokens.ids),
      trajectoriesA.map((t) => t.tokens.ids),
      'step 4 sampled the same tokens',
    );
    const weightsA = CheckpointReader.open(path.join(straight, 'checkpoints/step-000004'));
    const weightsB = CheckpointReader.open(path.join(interrupted, 'checkpoints/step-000004'));
    for (const name of weightsA.names()) assert.deepEqual(weightsB.read(name), weightsA.read(name), name);
    weightsA.close();
    weightsB.close();
  });

  it('skips non-finite updates, records them, and stops after three in a row', async () => {
    // A learning rate that would make every weight about 1e30: the sum of the new weights' squares overflows, so the update is skipped in-graph.
    const config = fixture.writeConfig('diverge.config.ts', {
      sft: '',
      evaluation: '{ samples: 2 }',
      steps: '8',
      algorithm: "{ name: 'ppo', groupSize: 2 }",
      optimization: '{ lr: 1e30, microBatchSize: 8 }',
    });
    const runDir = path.join(fixture.dir, 'runs', 'diverge');
    const result = await train(config, { runDir });
    assert.equal(result.run.status, 'failed');
    assert.match(
      result.run.error!.message,
      /3 steps in a row had only non-finite losses or gradients; stopped\. The last good checkpoint is checkpoints\/step-000000/,
    );
    const records = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
    const skipped = records.filter((m) => m.skipped);
    assert.ok(skipped.length >= 3, 'the skipped updates are recorded');
    assert.ok(
      skipped.every((m) => /would have made the weights non-finite/.test(m.skipped!.reason)),
      'the reason is recorded',
    );
    assert.ok(records.length < 8, 'the run stopped early');
    // The run store stays readable and the last good checkpoint is complete.
    const reader = new RunStoreReader(runDir);
    assert.ok(fs.existsSync(path.join(runDir, reader.run().lastCheckpoint!, 'trainer_state.json')));
  });
});
