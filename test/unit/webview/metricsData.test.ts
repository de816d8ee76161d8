import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { HealthWarning, MetricsColumns, RunSummary } from '#trainer/contract/protocol';
import { chartData, ema, unionSteps } from '../../../webview/metrics/chartData';
import { csvField, metricsCsv } from '../../../webview/metrics/csv';
import { groupMetrics } from '../../../webview/metrics/groups';
import { RunMetrics } from '../../../webview/metrics/store';
import { scoreVsToolCalls } from '../../../webview/metrics/scoreVsToolsData';
import { entrySteps, warningEntries } from '../../../webview/metrics/warningEntries';

function summary(id: string): RunSummary {
  return {
    dir: `/runs/${id}`,
    id,
    name: `run ${id}`,
    status: 'finished',
    algorithm: 'grpo',
    createdAt: '2026-01-01T00:00:00Z',
    totalSteps: 10,
  };
}

function run(id: string, columns: MetricsColumns): RunMetrics {
  const metrics = new RunMetrics(summary(id));
  metrics.append(columns);
  return metrics;
}

describe('metric groups', () => {
  it('puts known metrics in their charts in a fixed order, and the rest by prefix', () => {
    const groups = groupMetrics([
      'lr',
      'reward/std',
      'reward/mean',
      'reward/min',
      'reward/max',
      'loss/policy',
      'loss/kl',
      'loss/total',
      'time/step_s',
      'reward/format',
      'custom',
      'myscore/a',
      'myscore/b',
      'score/exact_match',
    ]);
    assert.deepEqual(
      groups.map((g) => [g.id, g.metrics]),
      [
        ['reward', ['reward/mean']],
        ['score', ['score/exact_match']],
        ['loss', ['loss/policy', 'loss/total']],
        ['loss-terms', ['loss/kl']],
        ['lr', ['lr']],
        ['time', ['time/step_s']],
        ['other-custom', ['custom']],
        ['other-myscore', ['myscore/a', 'myscore/b']],
        ['other-reward', ['reward/format']],
      ],
    );
    assert.ok(groups[0].band, 'reward spread becomes the band around the mean');
    assert.equal(groups.find((g) => g.id === 'other-myscore')!.title, 'myscore/…');
  });

  it("charts the warm start's check: the shares together, its loss apart", () => {
    const groups = groupMetrics(['loss/sft', 'sft/check_loss', 'sft/check_turns', 'sft/check_calls', 'lr']);
    assert.deepEqual(
      groups.map((g) => [g.id, g.metrics]),
      [
        ['loss-terms', ['loss/sft']],
        ['lr', ['lr']],
        ['warm-start-check', ['sft/check_calls', 'sft/check_turns']],
        ['other-sft', ['sft/check_loss']],
      ],
    );
  });

  it("titles the score chart by the run's task metric and draws it first", () => {
    const score = groupMetrics(['reward/mean', 'score/exact_match', 'score/within_1pct'], 'within_1pct').find(
      (g) => g.id === 'score',
    )!;
    assert.deepEqual(
      [score.title, score.metrics],
      ['Task metric: within_1pct', ['score/within_1pct', 'score/exact_match']],
    );
    assert.equal(
      groupMetrics(['score/exact_match']).find((g) => g.id === 'score')!.title,
      'Task score',
      'without a metric',
    );
  });

  it('keeps the reward spread as lines when there is no mean to put a band around', () => {
    assert.deepEqual(
      groupMetrics(['reward/min', 'reward/max']).map((g) => g.metrics),
      [['reward/max', 'reward/min']],
    );
  });
});

describe('EMA smoothing', () => {
  it('is the identity at weight 0 and debiased otherwise', () => {
    assert.deepEqual(ema([1, 2, 3], 0), [1, 2, 3]);
    const smoothed = ema([2, 2, 2], 0.9);
    smoothed.forEach((v) => assert.ok(Math.abs(v! - 2) < 1e-12, 'a constant stays constant (no pull toward 0)'));
    const [a, b] = ema([0, 10], 0.5);
    assert.equal(a, 0);
    assert.ok(Math.abs(b! - (10 * 0.5) / 0.75) < 1e-12);
  });

  it('passes gaps through without resetting the average', () => {
    const out = ema([1, null, undefined, 3], 0.5);
    assert.equal(out[1], null);
    assert.equal(out[2], undefined);
    assert.ok(Math.abs(out[3]! - (0.5 * 0.5 * 1 + 0.5 * 3) / 0.75) < 1e-12);
  });
});

describe('chart data', () => {
  const a = run('a', {
    steps: [1, 2, 3, 4],
    kinds: ['train', 'train', 'eval', 'train'],
    skipped: [null, null, null, 'non-finite loss'],
    values: {
      'reward/mean': [0.1, 0.2, 0.5, null],
      'reward/min': [0, 0, null, null],
      'reward/max': [1, 1, null, null],
      'reward/std': [0.2, 0.3, null, null],
    },
  });
  const b = run('b', {
    steps: [2, 6],
    kinds: ['train', 'train'],
    skipped: [null, null],
    values: { 'reward/mean': [0.4, 0.6] },
  });
  const [reward] = groupMetrics(['reward/mean', 'reward/min', 'reward/max', 'reward/std']);

  it('shares the union of steps as x, with gaps for non-finite values and spans across other kinds', () => {
    assert.deepEqual(unionSteps([a, b]).x, [1, 2, 3, 4, 6]);
    const data = chartData(reward, [a, b], { smoothing: 0, band: 'minmax' });
    assert.deepEqual(data.x, [1, 2, 3, 4, 6]);
    const lines = data.series.filter((s) => s.role === 'line');
    assert.deepEqual(
      lines.map((s) => s.label),
      ['a · reward/mean', 'a · reward/mean (eval)', 'b · reward/mean'],
    );
    assert.deepEqual(lines[0].values, [0.1, 0.2, undefined, null, undefined]);
    assert.deepEqual(lines[1].values, [undefined, undefined, 0.5, undefined, undefined]);
    assert.deepEqual(lines[2].values, [undefined, 0.4, undefined, undefined, 0.6]);
    assert.deepEqual(data.skipped, [{ run: 0, step: 4, reason: 'non-finite loss' }]);
  });

  it('shades min–max or mean ± std around the reward', () => {
    const minmax = chartData(reward, [a], { smoothing: 0, band: 'minmax' });
    assert.equal(minmax.bands.length, 1);
    assert.deepEqual(minmax.series[minmax.bands[0].upper].values.slice(0, 2), [1, 1]);
    assert.deepEqual(minmax.series[minmax.bands[0].lower].values.slice(0, 2), [0, 0]);
    const std = chartData(reward, [a], { smoothing: 0, band: 'std' });
    const upper = std.series[std.bands[0].upper].values;
    assert.ok(Math.abs(upper[0]! - 0.3) < 1e-12 && Math.abs(upper[1]! - 0.5) < 1e-12);
    assert.equal(
      chartData(reward, [b], { smoothing: 0, band: 'minmax' }).bands.length,
      0,
      'no spread recorded, no band',
    );
  });

  it('smooths every line with the same EMA', () => {
    const smoothed = chartData(reward, [b], { smoothing: 0.5, band: 'minmax' });
    assert.deepEqual(smoothed.series[0].values, ema([0.4, 0.6], 0.5));
  });

  it('grows as rows are appended, a new metric filled with nulls before it appeared', () => {
    const grow = run('g', { steps: [1], kinds: ['train'], skipped: [null], values: { x: [1] } });
    grow.append({ steps: [2], kinds: ['train'], skipped: [null], values: { x: [2], y: [5] } });
    assert.deepEqual(grow.values.get('y'), [null, 5]);
    assert.throws(
      () => grow.append({ steps: [3], kinds: ['train'], skipped: [null], values: { x: [1, 2] } }),
      /column x has 2 values for 1 steps/,
    );
  });
});

describe('metrics CSV', () => {
  it('quotes fields as RFC 4180 says', () => {
    assert.equal(csvField('plain'), 'plain');
    assert.equal(csvField('a,b'), '"a,b"');
    assert.equal(csvField('say "hi"'), '"say ""hi"""');
    assert.equal(csvField(null), '');
    assert.equal(csvField(0.1), '0.1');
  });

  it('has one line per recorded row and one column per metric, plus smoothed columns when smoothing', () => {
    const r = run('a', {
      steps: [1, 2],
      kinds: ['train', 'train'],
      skipped: [null, 'nan, twice'],
      values: { loss: [0.5, null], acc: [0.1, 0.3] },
    });
    assert.equal(
      metricsCsv([r], 0),
      'run,run_id,kind,step,skipped,acc,loss\nrun a,a,train,1,,0.1,0.5\nrun a,a,train,2,"nan, twice",0.3,\n',
    );
    const lines = metricsCsv([r], 0.5).trim().split('\n');
    assert.equal(lines[0], 'run,run_id,kind,step,skipped,acc,loss,acc (EMA 0.50),loss (EMA 0.50)');
    const last = lines[2].split(',');
    assert.ok(Math.abs(Number(last.at(-2)) - ema([0.1, 0.3], 0.5)[1]!) < 1e-12);
  });
});

describe('health', () => {
  const warn = (code: string, extra: Partial<HealthWarning> = {}): HealthWarning => ({
    code,
    severity: 'warn',
    message: `${code} seen`,
    advice: `fix ${code}`,
    ...extra,
  });

  it('puts the health metrics in their own charts, first', () => {
    const groups = groupMetrics([
      'reward/mean',
      'kl/mean',
      'kl/approx_update',
      'tools/error_rate',
      'tools/schema_error_rate',
      'tools/parse_error_rate',
      'health/dropped_groups',
      'health/zero_signal_groups',
      'entropy/mean',
      'clip/fraction',
      'tools/calls_per_trajectory',
    ]);
    assert.deepEqual(
      groups.map((g) => [g.section, g.id, g.metrics]),
      [
        ['health', 'signal', ['health/zero_signal_groups', 'health/dropped_groups']],
        ['health', 'entropy', ['entropy/mean']],
        ['health', 'clip', ['clip/fraction']],
        ['health', 'tool-errors', ['tools/parse_error_rate', 'tools/schema_error_rate', 'tools/error_rate']],
        ['health', 'kl', ['kl/approx_update', 'kl/mean']],
        ['training', 'reward', ['reward/mean']],
        ['training', 'tool-calls', ['tools/calls_per_trajectory']],
      ],
    );
  });

  it('lists warnings newest first, a warning repeated at consecutive steps as one line, critical first within a step', () => {
    const r = new RunMetrics(summary('h'));
    const rows: Array<[number, 'train' | 'eval', HealthWarning[] | null]> = [
      [1, 'train', [warn('zero_signal')]],
      [2, 'train', [warn('zero_signal')]],
      [2, 'eval', [warn('heldout_drop')]],
      [3, 'train', [warn('zero_signal', { message: 'newest words' })]],
      [4, 'train', null],
      [5, 'train', [warn('zero_signal'), warn('collapse', { severity: 'critical', action: 'rolled back' })]],
      [6, 'train', [warn('collapse', { severity: 'critical', action: 'rolled back again' })]],
    ];
    r.append({
      steps: rows.map((x) => x[0]),
      kinds: rows.map((x) => x[1]),
      skipped: rows.map(() => null),
      values: {},
      warnings: rows.map((x) => x[2]),
    });
    const entries = warningEntries(r);
    assert.deepEqual(
      entries.map((e) => [e.code, e.kind, e.firstStep, e.lastStep, e.occurrences, entrySteps(e)]),
      [
        ['collapse', 'train', 6, 6, 1, 'step 6'],
        ['collapse', 'train', 5, 5, 1, 'step 5'],
        ['zero_signal', 'train', 5, 5, 1, 'step 5'],
        ['zero_signal', 'train', 1, 3, 3, 'steps 1–3 (3 steps)'],
        ['heldout_drop', 'eval', 2, 2, 1, 'evaluation after step 2'],
      ],
      'an eval record between training steps does not break their run; a gap (step 4) does; an action is an event of its own',
    );
    assert.equal(entries[3].warning.message, 'newest words', 'the newest occurrence speaks for the line');
  });

  it('takes the score against tool calls from the evaluations that recorded both, in step order', () => {
    const r = run('s', {
      steps: [0, 1, 4, 4, 8],
      kinds: ['eval', 'train', 'eval', 'train', 'eval'],
      skipped: [null, null, null, null, null],
      values: { 'score/exact_match': [0.2, 0.9, 0.4, 0.5, null], 'tools/calls_per_trajectory': [0.5, 3, 1.5, 2, 2] },
    });
    assert.deepEqual(scoreVsToolCalls([r])[0].points, [
      { step: 0, calls: 0.5, score: 0.2 },
      { step: 4, calls: 1.5, score: 0.4 },
    ]);
    const named = new RunMetrics({ ...summary('n'), metric: 'f1' });
    named.append({
      steps: [2],
      kinds: ['eval'],
      skipped: [null],
      values: { 'score/f1': [0.7], 'score/exact_match': [0.1], 'tools/calls_per_trajectory': [1] },
    });
    assert.deepEqual(
      scoreVsToolCalls([named])[0],
      { run: named, metric: 'f1', points: [{ step: 2, calls: 1, score: 0.7 }] },
      "by the run's own task metric",
    );
  });
});
