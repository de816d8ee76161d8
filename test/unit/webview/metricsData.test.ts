import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { MetricsColumns, RunSummary } from '../../../trainer/shared/protocol';
import { chartData, ema, unionSteps } from '../../../webview/metrics/chartData';
import { csvField, metricsCsv } from '../../../webview/metrics/csv';
import { groupMetrics } from '../../../webview/metrics/groups';
import { RunMetrics } from '../../../webview/metrics/store';

function summary(id: string): RunSummary {
  return { dir: `/runs/${id}`, id, name: `run ${id}`, status: 'finished', algorithm: 'grpo', createdAt: '2026-01-01T00:00:00Z', totalSteps: 10 };
}

function run(id: string, columns: MetricsColumns): RunMetrics {
  const metrics = new RunMetrics(summary(id));
  metrics.append(columns);
  return metrics;
}

describe('metric groups', () => {
  it('puts known metrics in their charts in a fixed order, and the rest by prefix', () => {
    const groups = groupMetrics(['lr', 'reward/std', 'reward/mean', 'reward/min', 'reward/max', 'loss/policy', 'loss/kl', 'loss/total', 'time/step_s', 'reward/format', 'custom', 'myscore/a', 'myscore/b', 'score/exact_match']);
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
    assert.ok(Math.abs(b! - 10 * 0.5 / 0.75) < 1e-12);
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
    values: { 'reward/mean': [0.1, 0.2, 0.5, null], 'reward/min': [0, 0, null, null], 'reward/max': [1, 1, null, null], 'reward/std': [0.2, 0.3, null, null] },
  });
  const b = run('b', { steps: [2, 6], kinds: ['train', 'train'], skipped: [null, null], values: { 'reward/mean': [0.4, 0.6] } });
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
    assert.equal(chartData(reward, [b], { smoothing: 0, band: 'minmax' }).bands.length, 0, 'no spread recorded, no band');
  });

  it('smooths every line with the same EMA', () => {
    const smoothed = chartData(reward, [b], { smoothing: 0.5, band: 'minmax' });
    assert.deepEqual(smoothed.series[0].values, ema([0.4, 0.6], 0.5));
  });

  it('grows as rows are appended, a new metric filled with nulls before it appeared', () => {
    const grow = run('g', { steps: [1], kinds: ['train'], skipped: [null], values: { x: [1] } });
    grow.append({ steps: [2], kinds: ['train'], skipped: [null], values: { x: [2], y: [5] } });
    assert.deepEqual(grow.values.get('y'), [null, 5]);
    assert.throws(() => grow.append({ steps: [3], kinds: ['train'], skipped: [null], values: { x: [1, 2] } }), /column x has 2 values for 1 steps/);
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
    const r = run('a', { steps: [1, 2], kinds: ['train', 'train'], skipped: [null, 'nan, twice'], values: { loss: [0.5, null], acc: [0.1, 0.3] } });
    assert.equal(metricsCsv([r], 0), 'run,run_id,kind,step,skipped,acc,loss\nrun a,a,train,1,,0.1,0.5\nrun a,a,train,2,"nan, twice",0.3,\n');
    const lines = metricsCsv([r], 0.5).trim().split('\n');
    assert.equal(lines[0], 'run,run_id,kind,step,skipped,acc,loss,acc (EMA 0.50),loss (EMA 0.50)');
    const last = lines[2].split(',');
    assert.ok(Math.abs(Number(last.at(-2)) - ema([0.1, 0.3], 0.5)[1]!) < 1e-12);
  });
});
