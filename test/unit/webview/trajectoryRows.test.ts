import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { TrajectoryRow } from '#trainer/contract/protocol';
import {
  adjacentStep,
  DEFAULT_SORT,
  matchesFilters,
  nearestStep,
  NO_FILTERS,
  parseBound,
  toggleSort,
  toolNames,
  visibleRows,
} from '../../../webview/trajectories/rows';

function row(index: number, patch: Partial<TrajectoryRow> = {}): TrajectoryRow {
  return {
    step: 1,
    index,
    group: index >> 1,
    sample: index & 1,
    rowId: `q-${index}`,
    prompt: `question ${index}`,
    reward: index / 10,
    outcome: 0,
    process: 0,
    turns: 5,
    toolCalls: 1,
    errors: 0,
    tools: ['search'],
    errorKinds: [],
    responseLength: 100 + index,
    totalLength: 300,
    finishReason: 'answered',
    ...patch,
  };
}

const rows = [
  row(0, { reward: 1.2, prompt: 'Where is Veldmark?', answer: 'north', advantage: 0.4 }),
  row(1, { reward: -0.5, errors: 2, errorKinds: ['parse', 'timeout'], finishReason: 'max_turns', advantage: -1.1 }),
  row(2, { reward: 0.3, tools: ['search', 'calculator'], toolCalls: 3 }),
  row(3, { reward: 0.3, tools: [], toolCalls: 0, answer: 'Lyrecourt' }),
];

describe('trajectory table rows', () => {
  it('sorts by any column, ties in batch order, missing advantages last either way', () => {
    const byReward = visibleRows(rows, NO_FILTERS, { column: 'reward', direction: 'desc' }).map((r) => r.index);
    assert.deepEqual(byReward, [0, 2, 3, 1]);
    const byRewardAsc = visibleRows(rows, NO_FILTERS, { column: 'reward', direction: 'asc' }).map((r) => r.index);
    assert.deepEqual(byRewardAsc, [1, 2, 3, 0]);
    assert.deepEqual(
      visibleRows(rows, NO_FILTERS, { column: 'advantage', direction: 'asc' }).map((r) => r.index),
      [1, 0, 2, 3],
    );
    assert.deepEqual(
      visibleRows(rows, NO_FILTERS, { column: 'advantage', direction: 'desc' }).map((r) => r.index),
      [0, 1, 2, 3],
    );
    assert.deepEqual(
      visibleRows(rows, NO_FILTERS, { column: 'prompt', direction: 'asc' }).map((r) => r.index),
      [1, 2, 3, 0],
    );
    assert.deepEqual(
      visibleRows(rows, NO_FILTERS, { column: 'finishReason', direction: 'desc' }).map((r) => r.index),
      [1, 0, 2, 3],
    );
    assert.deepEqual(
      visibleRows(rows, NO_FILTERS, DEFAULT_SORT).map((r) => r.index),
      [0, 1, 2, 3],
    );
  });

  it('filters by text in prompt, answer or row id, case-insensitively', () => {
    const find = (text: string) => visibleRows(rows, { ...NO_FILTERS, text }, DEFAULT_SORT).map((r) => r.index);
    assert.deepEqual(find('veldMARK'), [0]);
    assert.deepEqual(find('lyrecourt'), [3]);
    assert.deepEqual(find('q-2'), [2]);
    assert.deepEqual(find('nowhere'), []);
  });

  it('filters by reward range, errors, tool and finish reason, all together', () => {
    const only = (patch: Partial<typeof NO_FILTERS>) =>
      rows.filter((r) => matchesFilters(r, { ...NO_FILTERS, ...patch })).map((r) => r.index);
    assert.deepEqual(only({ rewardMin: 0.3 }), [0, 2, 3]);
    assert.deepEqual(only({ rewardMin: 0, rewardMax: 0.3 }), [2, 3]);
    assert.deepEqual(only({ errors: 'with' }), [1]);
    assert.deepEqual(only({ errors: 'without' }), [0, 2, 3]);
    assert.deepEqual(only({ tool: 'calculator' }), [2]);
    assert.deepEqual(only({ finishReason: 'max_turns' }), [1]);
    assert.deepEqual(only({ tool: 'search', rewardMax: 0.5, errors: 'without' }), [2]);
  });

  it('sorts by a clicked column, reversing on a second click', () => {
    const first = toggleSort(DEFAULT_SORT, 'reward');
    assert.deepEqual(first, { column: 'reward', direction: 'desc' });
    assert.deepEqual(toggleSort(first, 'reward'), { column: 'reward', direction: 'asc' });
    assert.deepEqual(toggleSort(first, 'prompt'), { column: 'prompt', direction: 'asc' });
  });

  it('offers the tools called in the step, sorted', () => {
    assert.deepEqual(toolNames(rows), ['calculator', 'search']);
  });

  it('reads reward bounds typed by the user', () => {
    assert.deepEqual(parseBound(''), { value: null });
    assert.deepEqual(parseBound(' -0.5 '), { value: -0.5 });
    assert.deepEqual(parseBound('1e-2'), { value: 0.01 });
    assert.deepEqual(parseBound('abc'), { error: '"abc" is not a number' });
  });

  it('moves between existing steps and snaps a typed step to the nearest one', () => {
    const steps = [1, 2, 5, 10];
    assert.equal(adjacentStep(steps, 2, 1), 5);
    assert.equal(adjacentStep(steps, 5, -1), 2);
    assert.equal(adjacentStep(steps, 10, 1), 10);
    assert.equal(adjacentStep(steps, 1, -1), 1);
    assert.equal(nearestStep(steps, 4), 5);
    assert.equal(nearestStep(steps, 99), 10);
    assert.equal(nearestStep([], 3), undefined);
  });
});
