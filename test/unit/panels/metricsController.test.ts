import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MetricsController } from '../../../extension/panels/metricsController';
import { toMetricsColumns } from '../../../extension/panels/metricsColumns';
import { RunDirectorySource } from '../../../extension/panels/source/runDirectorySource';
import { RunSources } from '../../../extension/panels/source/registry';
import { runSummaryOf } from '../../../extension/panels/source/summarize';
import { writeRecordedRun, recordedRunWriter } from '../../fixtures/recordedRun';
import { HEALTH_RUN_BEST, writeRecordedHealthRun } from '../../fixtures/recordedHealthRun';
import { listRuns } from '#trainer/contract/runstore';
import { MetricsToWebview, type MetricsRecord } from '#trainer/contract/protocol';

function setup() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-ctl-'));
  const a = writeRecordedRun(path.join(root, 'run-a'), {
    steps: 4,
    batch: 4,
    groupSize: 2,
    seed: 1,
    status: 'running',
  });
  const b = writeRecordedRun(path.join(root, 'run-b'), { steps: 6, batch: 4, groupSize: 2, seed: 2 });
  const sources = new RunSources((dir) => new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false }));
  const posted: MetricsToWebview[] = [];
  const saved: Array<[string, string]> = [];
  const controller = new MetricsController(
    {
      acquire: (dir) => sources.acquire(dir),
      availableRuns: () => listRuns(root).map((r) => runSummaryOf(r.dir, r.run!)),
      saveCsv: async (name, csv) => {
        saved.push([name, csv]);
        return `/saved/${name}`;
      },
    },
    (m) => posted.push(MetricsToWebview.parse(m)),
    [a],
  );
  return { a, b, sources, posted, saved, controller };
}

const metricsOf = (posted: MetricsToWebview[]) =>
  posted.filter((m): m is Extract<MetricsToWebview, { type: 'metrics' }> => m.type === 'metrics');

describe('toMetricsColumns', () => {
  it('turns records into aligned columns, null where a metric is missing', () => {
    const records: MetricsRecord[] = [
      { step: 1, time: 't1', kind: 'train', values: { a: 1 } },
      { step: 2, time: 't2', kind: 'eval', values: { a: 2, b: 20 } },
      {
        step: 3,
        time: 't3',
        kind: 'train',
        values: { b: null },
        nonFinite: ['b'],
        skipped: { reason: 'non-finite loss' },
      },
    ];
    assert.deepEqual(toMetricsColumns(records), {
      steps: [1, 2, 3],
      kinds: ['train', 'eval', 'train'],
      skipped: [null, null, 'non-finite loss'],
      values: { a: [1, 2, null], b: [null, 20, null] },
    });
  });

  it("carries the health checks' warnings row by row, and only when some record has one", () => {
    const warning = {
      code: 'zero_signal',
      severity: 'warn' as const,
      message: '3 of 4 groups had equal rewards',
      advice: 'raise rollout.temperature',
    };
    const records: MetricsRecord[] = [
      { step: 1, time: 't1', kind: 'train', values: { a: 1 } },
      { step: 2, time: 't2', kind: 'train', values: { a: 2 }, warnings: [warning] },
      { step: 3, time: 't3', kind: 'train', values: { a: 3 }, warnings: [] },
    ];
    assert.deepEqual(toMetricsColumns(records).warnings, [null, [warning], null]);
    assert.equal('warnings' in toMetricsColumns([records[0], records[2]]), false, 'no warnings column to send');
  });
});

describe('runSummaryOf', () => {
  it("names the run's best evaluation and the checkpoint kept with it", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-best-'));
    const dir = writeRecordedHealthRun(path.join(root, 'run-health'), { status: 'finished' });
    const run = listRuns(root)[0].run!;
    assert.deepEqual(runSummaryOf(dir, run).best, HEALTH_RUN_BEST);
    assert.equal('best' in runSummaryOf(dir, { ...run, best: undefined }), false);
  });
});

describe('MetricsController', () => {
  it('on ready sends the runs to choose from, then the shown run and all its metrics as columns', () => {
    const { a, posted, controller } = setup();
    controller.receive({ type: 'ready' });
    assert.equal(posted[0].type, 'runs');
    assert.deepEqual(posted[0].type === 'runs' && posted[0].shown, [a]);
    assert.equal(posted[0].type === 'runs' && posted[0].available.length, 2);
    const [metrics] = metricsOf(posted);
    assert.equal(metrics.runDir, a);
    assert.equal(metrics.reset, true);
    assert.deepEqual(metrics.columns.steps, [1, 2, 3, 4]);
    assert.equal(metrics.columns.values['reward/mean'].length, 4);
  });

  it('sends only appended records as a run grows', () => {
    const { a, posted, controller, sources } = setup();
    controller.receive({ type: 'ready' });
    posted.length = 0;
    const writer = recordedRunWriter(a);
    writer.appendMetrics({ step: 5, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 0.75 } });
    const lease = sources.acquire(a);
    (lease.source as RunDirectorySource).refresh();
    lease.release();
    const [update] = metricsOf(posted);
    assert.equal(update.reset, false);
    assert.deepEqual(update.columns.steps, [5]);
    assert.deepEqual(update.columns.values, { 'reward/mean': [0.75] });
  });

  it('overlays the runs it is asked for and lets go of the others', () => {
    const { a, b, posted, controller, sources } = setup();
    controller.receive({ type: 'ready' });
    posted.length = 0;
    controller.receive({ type: 'showRuns', runDirs: [a, b] });
    assert.deepEqual(controller.runDirs, [a, b]);
    assert.deepEqual(
      metricsOf(posted).map((m) => [m.runDir, m.reset, m.columns.steps.length]),
      [[b, true, 6]],
      'only the added run is sent',
    );
    assert.equal(sources.size, 2);
    controller.receive({ type: 'showRuns', runDirs: [a] });
    assert.equal(sources.size, 1);
    controller.dispose();
    assert.equal(sources.size, 0);
  });

  it('reports a run that cannot be shown and keeps the others', () => {
    const { a, posted, controller } = setup();
    controller.receive({ type: 'ready' });
    controller.receive({ type: 'showRuns', runDirs: [a, '/nonexistent/run'] });
    assert.deepEqual(controller.runDirs, [a]);
    const notice = posted.find((m) => m.type === 'notice');
    assert.match(
      notice?.type === 'notice' ? notice.message : '',
      /Cannot show \/nonexistent\/run: .*run\.json: not found/,
    );
  });

  it('saves the exported CSV through the host and says where', async () => {
    const { posted, saved, controller } = setup();
    controller.receive({ type: 'ready' });
    controller.receive({ type: 'exportCsv', fileName: 'run-a-metrics.csv', csv: 'step\n1\n' });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(saved, [['run-a-metrics.csv', 'step\n1\n']]);
    assert.deepEqual(posted.at(-1), { type: 'notice', level: 'info', message: 'Saved /saved/run-a-metrics.csv' });
  });

  it('rejects a malformed message, naming the field', () => {
    const { controller } = setup();
    assert.throws(
      () => controller.receive({ type: 'showRuns', runDirs: [] }),
      /message from the Metrics panel: runDirs/,
    );
  });
});
