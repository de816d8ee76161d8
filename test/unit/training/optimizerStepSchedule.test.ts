/**
 * The RL learning-rate schedule counts optimizer steps, not RL steps: with epochs × mini-batches
 * optimizer steps per RL step, a warm-up of 3 is 3 optimizer steps, and a cosine decay reaches its
 * end at the run's last optimizer step. The rates are a function of the RL step alone, so a
 * resumed run continues at the same ones.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { learningRate, optimizerStepRates, type ScheduleConfig } from '#trainer/pipeline/training/step/schedule';
import { optimizerStepsPerRlStep, rlSchedule, criticSchedule } from '#trainer/pipeline/training/config/configOptions';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';

const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-15, `${a} vs ${b}`);
/** Every optimizer step's rate over a run of `rlSteps` RL steps with `perStep` optimizer steps each. */
const rates = (config: ScheduleConfig, rlSteps: number, perStep: number) =>
  Array.from({ length: rlSteps }, (_, s) =>
    Array.from({ length: perStep }, (_, k) => optimizerStepRates(config, s + 1, rlSteps, perStep)(k)),
  ).flat();

describe('the RL schedule over optimizer steps', () => {
  it('warms up over optimizer steps: 3 of them, inside the first RL step of 4', () => {
    const got = rates({ lr: 1, warmupSteps: 3, schedule: 'constant', minLrRatio: 0 }, 3, 4);
    assert.deepEqual(got.slice(0, 4), [1 / 3, 2 / 3, 1, 1]);
    assert.ok(got.slice(3).every((lr) => lr === 1));
  });

  it('decays by cosine over the whole run of optimizer steps, to its floor at the end', () => {
    const config: ScheduleConfig = { lr: 1e-3, warmupSteps: 2, schedule: 'cosine', minLrRatio: 0.1 };
    const got = rates(config, 5, 3);
    assert.equal(got.length, 15);
    assert.deepEqual(got.slice(0, 2), [5e-4, 1e-3], 'two optimizer steps of warm-up, inside the first RL step');
    for (let i = 3; i < got.length; i++)
      assert.ok(got[i] < got[i - 1], `falls after the warm-up, at optimizer step ${i}`);
    // Optimizer step i of 15 (0-based), 13 after the warm-up: progress (i − 2) / 13.
    got.slice(2).forEach((lr, j) => close(lr, 1e-4 + 9e-4 * 0.5 * (1 + Math.cos((Math.PI * j) / 13))));
    close(got[14], learningRate(config, 14, 15));
    assert.ok(got[14] - 1e-4 < 2e-5, 'the last optimizer step is near the floor');
  });

  it('one optimizer step per RL step is the schedule it always was', () => {
    const config: ScheduleConfig = { lr: 2e-4, warmupSteps: 2, schedule: 'linear', minLrRatio: 0 };
    assert.deepEqual(
      rates(config, 6, 1),
      Array.from({ length: 6 }, (_, s) => learningRate(config, s, 6)),
    );
  });

  it('refuses an optimizer step the RL step does not plan', () => {
    const at = optimizerStepRates({ lr: 1, warmupSteps: 0, schedule: 'constant', minLrRatio: 0 }, 1, 2, 2);
    assert.throws(() => at(2), /optimizer step 2 of an RL step that plans 2/);
    assert.throws(
      () => optimizerStepRates({ lr: 1, warmupSteps: 0, schedule: 'constant', minLrRatio: 0 }, 1, 2, 0),
      /positive integer/,
    );
  });

  it('a config plans epochs × mini-batches optimizer steps per RL step; the critic follows the same count at its own rate', () => {
    const config = parseConfig(
      {
        model: { path: 'model' },
        data: { train: 't.jsonl' },
        rewards: { outcome: [] },
        steps: 4,
        algorithm: { name: 'ppo', epochs: 2, miniBatches: 3 },
        critic: { lr: 5e-5 },
        optimization: { lr: 1e-4, warmupSteps: 4, schedule: 'cosine' },
      },
      'config.ts',
    );
    assert.equal(optimizerStepsPerRlStep(config), 6);
    const policy = optimizerStepRates(rlSchedule(config), 1, 4, 6);
    const critic = optimizerStepRates(criticSchedule(config), 1, 4, 6);
    for (let k = 0; k < 6; k++) close(critic(k) / policy(k), 0.5);
    close(policy(3), 1e-4);
  });
});
