/**
 * The task metric: a config names the outcome reward a run is judged by (default: the first);
 * its mean is recorded as `score/<name>` whatever the name is.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { datasetFromRows } from '#trainer/foundations/data';
import { outcomeReward, scoreTrajectories } from '#trainer/pipeline/rewards';
import type { Trajectory } from '#trainer/pipeline/rollout';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';
import { rolloutMetrics } from '#trainer/pipeline/training/step/rolloutMetrics';
import { formatScore, taskMetric } from '#trainer/pipeline/training/step/taskMetric';
import { ToolSet } from '#trainer/foundations/tools';

const within = outcomeReward('within_1pct', (_t, row) =>
  Number((row as unknown as { answer: string }).answer) > 10 ? 1 : 0,
);
const format = outcomeReward('format', () => 1);

function config(extra: Record<string, unknown>) {
  return {
    model: { path: 'model' },
    data: { train: 'train.jsonl' },
    rewards: { outcome: [within, format] },
    algorithm: { name: 'grpo', groupSize: 2 },
    steps: 2,
    ...extra,
  };
}

function trajectory(index: number, row: Trajectory['row']): Trajectory {
  return {
    index,
    rowId: row.id,
    group: 0,
    sample: index,
    row,
    prompt: 'q',
    messages: [],
    ids: [1, 2],
    mask: [0, 1],
    logprobs: [0, 0],
    entropies: [0, 0],
    promptLength: 1,
    turns: [],
    calls: [],
    finishReason: 'answered',
    historyRewrites: [],
  };
}

describe('the task metric', () => {
  it('is the first outcome reward unless the config names one', () => {
    assert.equal(taskMetric(parseConfig(config({}), 'a.config.ts')), 'within_1pct');
    assert.equal(taskMetric(parseConfig(config({ metric: 'format' }), 'a.config.ts')), 'format');
  });

  it('must name an outcome reward; the error names the field and the choices', () => {
    assert.throws(() => parseConfig(config({ metric: 'exact_match' }), 'a.config.ts'), {
      message:
        'a.config.ts: metric: "exact_match" is not the name of an outcome reward; expected one of "within_1pct", "format"',
    });
  });

  it('is recorded as score/<name> — not only when a reward is called exact_match', async () => {
    const rows = datasetFromRows('rows', [
      { id: 'a', prompt: 'q', answer: '12' },
      { id: 'b', prompt: 'q', answer: '3' },
      { id: 'c', prompt: 'q', answer: '40' },
      { id: 'd', prompt: 'q', answer: '99' },
    ]).rows;
    const trajectories = rows.map((row, i) => trajectory(i, row));
    const rewards = await scoreTrajectories(trajectories, { outcome: [within, format] }, new ToolSet([]));
    const metrics = rolloutMetrics(trajectories, rewards, 'within_1pct');
    assert.equal(metrics['score/within_1pct'], 0.75);
    assert.equal(metrics['score/format'], undefined, 'only the task metric is a score');
    assert.equal(metrics['score/exact_match'], undefined);
    assert.equal(formatScore('within_1pct', metrics['score/within_1pct']), 'within_1pct 0.750');
  });
});
