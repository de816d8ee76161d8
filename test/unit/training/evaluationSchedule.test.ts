/**
 * Evaluation during training is on by default wherever there are held-out rows: a few
 * evaluations a run, on a bounded and fixed subset; the config's `onCollapse` and `health`
 * come with defaults and name the field in their errors.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { outcomeReward } from '#trainer/pipeline/rewards';
import { evaluationEvery, evaluationRows } from '#trainer/pipeline/training/evaluation/evaluationSchedule';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';

const reward = outcomeReward('exact_match', () => 0);
const config = (extra: Record<string, unknown>) =>
  parseConfig(
    {
      model: { path: 'model' },
      data: { train: 'train.jsonl', eval: 'heldout.jsonl' },
      rewards: { outcome: [reward] },
      algorithm: { name: 'grpo', groupSize: 2 },
      steps: 40,
      ...extra,
    },
    'a.config.ts',
  );

describe('the evaluation schedule', () => {
  it('evaluates five or six times a run by default, every step in runs under five steps', () => {
    const every = (steps: number) => evaluationEvery(config({ steps }), steps);
    assert.deepEqual([2, 3, 5, 8, 16, 30, 40, 100].map(every), [1, 1, 1, 2, 4, 6, 8, 20]);
    // The totalSteps of a --steps override, not the config's.
    assert.equal(evaluationEvery(config({ steps: 40 }), 10), 2);
  });

  it('keeps what the config says, and is off without held-out rows', () => {
    assert.equal(evaluationEvery(config({ evaluation: { every: 0 } }), 40), 0);
    assert.equal(evaluationEvery(config({ evaluation: { every: 3 } }), 40), 3);
    assert.equal(evaluationEvery(config({ data: { train: 'train.jsonl' } }), 40), 0);
    assert.equal(
      evaluationEvery(config({ data: { train: 'train.jsonl' }, evaluation: { data: 'other.jsonl' } }), 40),
      8,
    );
  });

  it('uses the first 100 rows unless evaluation.samples says', () => {
    assert.equal(evaluationRows(config({}), 30), 30);
    assert.equal(evaluationRows(config({}), 5000), 100);
    assert.equal(evaluationRows(config({ evaluation: { samples: 400 } }), 5000), 400);
    assert.equal(evaluationRows(config({ evaluation: { samples: 400 } }), 50), 50);
  });
});

describe('the collapse settings', () => {
  it('default to warning, with the health thresholds filled in', () => {
    const c = config({});
    assert.equal(c.onCollapse, 'warn');
    assert.equal(c.health.zeroSignal, 0.5);
    assert.equal(
      config({ health: { zeroSignal: 0.8 } }).health.window,
      5,
      'a partial section keeps the other defaults',
    );
  });

  it('name the field of a wrong value', () => {
    assert.throws(() => config({ onCollapse: 'restart' }), /a\.config\.ts: onCollapse: .*"warn".*"rollback".*"stop"/);
    assert.throws(() => config({ health: { zeroSignal: 2 } }), /a\.config\.ts: health\.zeroSignal/);
    assert.throws(() => config({ health: { zeroSignals: 0.2 } }), /a\.config\.ts: health.*zeroSignals/);
  });
});
