/**
 * The best checkpoint and the response to a collapse, on a tiny real model: evaluations during
 * training are on by default, the best one's weights are kept as checkpoints/best through step
 * pruning (the warm start's when RL never beats it) and `eval` reproduces its score from there;
 * `onCollapse: 'rollback'` puts the best weights back and halves the learning rate (a resume
 * keeps the halved rate); `onCollapse: 'stop'` ends the run as stopped.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { RunStoreReader } from '#trainer/contract/runstore';
import { evaluateCheckpoint } from '#trainer/pipeline/training/evaluation/evaluateCheckpoint';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

/**
 * Task metrics whose course is certain on a tiny model, beside the example's exact match (weight
 * 0: they change nothing the run learns): `confidence`, the geometric mean probability of the
 * tokens the policy chose, moves with every update; `never` is 0 whatever the weights, so no
 * evaluation ever beats the one before RL.
 */
const REWARDS =
  '{ ...rewards, outcome: [...rewards.outcome, ' +
  "{ name: 'confidence', weight: 0, score: (t: { mask: number[]; logprobs: number[] }) => { let s = 0, n = 0; t.mask.forEach((m, i) => { if (m) { s += t.logprobs[i]; n++; } }); return n ? Math.exp(s / n) : 0; } }, " +
  "{ name: 'never', weight: 0, score: () => 0 }] }";

/** Forced collapse (test-only thresholds): any entropy is a jump, any tool error rate a rise, from the second step on. */
const ALWAYS_COLLAPSING =
  '{ minHistory: 1, entropyJump: 0, entropyJumpMin: -100, toolErrorRise: -1, collapseSteps: 1 }';

async function train(configFile: string, options: ConstructorParameters<typeof TrainingRun>[1]) {
  const lines: string[] = [];
  const result = await new TrainingRun(await loadConfig(configFile), {
    inProcessDevice: true,
    log: (l) => lines.push(l),
    ...options,
  }).run();
  return { result, lines };
}

function tensors(dir: string): Map<string, Float32Array> {
  const reader = CheckpointReader.open(dir, 'model.safetensors');
  try {
    return new Map(reader.names().map((n) => [n, reader.read(n)]));
  } finally {
    reader.close();
  }
}

const stateOf = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, 'trainer_state.json'), 'utf8'));

describe('the best checkpoint', () => {
  it('is kept after each evaluation that beats the best, through pruning, and eval reproduces its score', async () => {
    const config = fixture.writeConfig('best.config.ts', {
      rewards: REWARDS,
      metric: "'confidence'",
      sft: '',
      steps: '4',
      evaluation: '{ samples: 4 }',
      output: "{ runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 1 }",
    });
    const runDir = path.join(fixture.dir, 'runs', 'best');
    const { result, lines } = await train(config, { runDir });
    assert.equal(result.run.status, 'finished');
    const reader = new RunStoreReader(runDir);
    // On by default: 4 steps evaluate after every step (⌈4 / 5⌉ = 1), besides before and after.
    assert.deepEqual(reader.evaluations(), [0, 1, 2, 3, 4]);
    const scores = reader
      .metrics()
      .records.filter((m) => m.kind === 'eval')
      .map((m) => [m.step, m.values['score/confidence'] as number] as const);
    const top = Math.max(...scores.map(([, v]) => v));
    const bestStep = scores.find(([, v]) => v === top)![0];
    const expected = { step: bestStep, metric: 'confidence', value: top, checkpoint: 'checkpoints/best' };
    assert.deepEqual(reader.run().best, expected);
    assert.deepEqual(result.best, expected);
    assert.ok(
      lines.includes(`best: step ${bestStep}, confidence ${top.toFixed(3)} (checkpoints/best)`),
      lines.join('\n'),
    );
    assert.ok(
      new Set(scores.map(([, v]) => v)).size > 1,
      `the scores should move with the weights: ${JSON.stringify(scores)}`,
    );
    // Pruning kept one step checkpoint; the best is beside it, whole.
    assert.deepEqual(reader.checkpoints(), ['checkpoints/step-000004']);
    const bestDir = path.join(runDir, 'checkpoints/best');
    assert.equal(stateOf(bestDir).step, bestStep);
    // `eval` takes it as any checkpoint folder and scores what the run scored at that step.
    const again = await evaluateCheckpoint(await loadConfig(config), bestDir, { samples: 4 });
    assert.equal(again.metric, 'confidence');
    assert.ok(Math.abs(again.score! - top) < 1e-6, `eval of checkpoints/best: ${again.score}, recorded ${top}`);
  });

  it('is the warm start when RL never beats it, kept after its step checkpoint is pruned', async () => {
    const config = fixture.writeConfig('never.config.ts', {
      rewards: REWARDS,
      metric: "'never'",
      steps: '2',
      evaluation: '{ samples: 2 }',
      output: "{ runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 1 }",
    });
    const runDir = path.join(fixture.dir, 'runs', 'never');
    const { result } = await train(config, { runDir });
    assert.deepEqual(result.best, { step: 0, metric: 'never', value: 0, checkpoint: 'checkpoints/best' });
    assert.deepEqual(new RunStoreReader(runDir).checkpoints(), ['checkpoints/step-000002']);
    assert.equal(stateOf(path.join(runDir, 'checkpoints/best')).step, 0);
    assert.ok(fs.existsSync(path.join(runDir, 'checkpoints/best/model.safetensors')));
    // The evaluation after the last step says RL gained nothing; the ones before it do not.
    const evals = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'eval');
    assert.deepEqual(
      evals.map((m) => [m.step, (m.warnings ?? []).map((w) => w.code)]),
      [
        [0, []],
        [1, []],
        [2, ['no_gain']],
      ],
    );
    assert.match(evals[2].warnings![0].message, /checkpoints\/best holds the weights RL started from$/);
  });
});

describe('onCollapse', () => {
  const collapsing = (name: string, onCollapse: string, steps: string) =>
    fixture.writeConfig(name, {
      rewards: REWARDS,
      metric: "'never'",
      sft: '',
      steps,
      evaluation: '{ samples: 2 }',
      onCollapse: `'${onCollapse}'`,
      health: ALWAYS_COLLAPSING,
      output: "{ runsDir: 'runs', checkpointEvery: 1, keepCheckpoints: 5 }",
    });

  it("'rollback' restores the best weights, halves the learning rate, says so, and goes on; a resume keeps the halved rate", async () => {
    const config = collapsing('rollback.config.ts', 'rollback', '3');
    const runDir = path.join(fixture.dir, 'runs', 'rollback');
    const { result, lines } = await train(config, { runDir });
    assert.equal(result.run.status, 'finished');
    assert.equal(result.run.lastStep, 3);
    const steps = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
    // Step 1 has no history yet; step 2 collapses (by the forced thresholds) and is rolled back; step 3's history starts afresh.
    assert.deepEqual(
      steps.map((m) => (m.warnings ?? []).filter((w) => w.code === 'collapse').length),
      [0, 1, 0],
    );
    const collapse = steps[1].warnings!.find((w) => w.code === 'collapse')!;
    assert.equal(collapse.severity, 'critical');
    assert.equal(
      collapse.action,
      'rolled back to step 0, never 0.000 (checkpoints/best); learning rate ×0.5 from now on',
    );
    assert.ok(
      lines.some((l) => l.startsWith('COLLAPSE at step 2: the policy is collapsing')),
      lines.join('\n'),
    );
    assert.ok(lines.includes(collapse.action!));
    // The step's checkpoint, saved after the rollback, holds the best weights exactly, and the multiplier.
    const best = tensors(path.join(runDir, 'checkpoints/best'));
    const afterRollback = tensors(path.join(runDir, 'checkpoints/step-000002'));
    const beforeRollback = tensors(path.join(runDir, 'checkpoints/step-000001'));
    assert.ok(
      [...best].some(([n, t]) => t.some((x, i) => x !== beforeRollback.get(n)![i])),
      'step 1 trained away from the best',
    );
    for (const [name, t] of best) assert.deepEqual(afterRollback.get(name), t, name);
    assert.equal(stateOf(path.join(runDir, 'checkpoints/step-000002')).lrScale, 0.5);
    assert.equal(
      stateOf(path.join(runDir, 'checkpoints/step-000002')).optimizerSteps,
      0,
      "the best's optimizer state came back with its weights (step 0: none yet)",
    );
    assert.equal(steps[2].values['lr'], (steps[0].values['lr'] as number) / 2);
    // What the policy generates is the best's again: the greedy evaluation after step 2 equals the one before RL, token for token.
    const confidence = (step: number) =>
      new RunStoreReader(runDir)
        .evaluationTrajectories(step)
        .records.map((t) => [t.tokens.ids, t.rewards.components['confidence']]);
    assert.notDeepEqual(confidence(1), confidence(0), 'step 1 changed what the policy generates');
    assert.deepEqual(confidence(2), confidence(0));
    // Resumed after step 2, the run goes on at the halved rate, as the uninterrupted one did.
    const interrupted = path.join(fixture.dir, 'runs', 'rollback-interrupted');
    await train(config, { runDir: interrupted, steps: 2 });
    await train(config, { resume: interrupted, steps: 3 });
    const resumed = new RunStoreReader(interrupted).metrics().records.filter((m) => m.kind === 'train');
    assert.deepEqual(
      resumed.map((m) => m.values['lr']),
      steps.map((m) => m.values['lr']),
    );
    assert.deepEqual(
      resumed.map((m) => (m.warnings ?? []).map((w) => w.code)),
      steps.map((m) => (m.warnings ?? []).map((w) => w.code)),
      'the resumed run rebuilt the same history',
    );
  });

  it("'stop' ends the run as stopped after the collapsing step, with the reason", async () => {
    const runDir = path.join(fixture.dir, 'runs', 'stop');
    const { result, lines } = await train(collapsing('stop.config.ts', 'stop', '4'), { runDir });
    assert.equal(result.run.status, 'stopped');
    assert.equal(result.run.lastStep, 2);
    assert.equal(result.evalAfter, undefined);
    const collapse = new RunStoreReader(runDir)
      .metrics()
      .records.find((m) => m.kind === 'train' && m.step === 2)!
      .warnings!.find((w) => w.code === 'collapse')!;
    assert.equal(
      collapse.action,
      "stopped the run (onCollapse: 'stop'); the best weights are at step 0, never 0.000 (checkpoints/best)",
    );
    assert.ok(lines.includes(collapse.action!));
  });
});
