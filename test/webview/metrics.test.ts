/**
 * The built Metrics webview (dist/webview/metrics.js) in Chromium, fed by the real host-side
 * controller reading recorded runs: one uPlot chart per metric group, the reward band, eval
 * series, skipped updates, live appends, comparison with another run, smoothing, CSV export,
 * theme colours and the state kept across a reload; and "is it learning?": the health charts
 * first, the health checks' warnings newest first, the best evaluation, held-out score against
 * tool calls.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { MetricsController } from '../../extension/panels/metricsController';
import { RunDirectorySource } from '../../extension/panels/source/runDirectorySource';
import { RunSources } from '../../extension/panels/source/registry';
import { runSummaryOf } from '../../extension/panels/source/summarize';
import { appendJsonl, listRuns, RunStoreReader } from '#trainer/contract/runstore';
import type { MetricsPanelState, MetricsRecord } from '#trainer/contract/protocol';
import { writeRecordedRun, recordedRunWriter } from '../fixtures/recordedRun';
import { HEALTH_RUN_COLLAPSE, writeRecordedHealthRun } from '../fixtures/recordedHealthRun';
import { launchBrowser } from '../harness/browser';
import { testOutputDir } from '../harness/paths';
import { connect, openWebviewApp, THEMES, type WebviewApp } from '../harness/webviewApp';

let browser: Browser;
const cleanups: Array<() => void> = [];

/** Two recorded runs in one runs folder; run A also has evaluations and a skipped update. */
function recordedRuns() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-dom-'));
  const a = writeRecordedRun(path.join(root, 'run-a'), {
    steps: 10,
    batch: 8,
    groupSize: 4,
    seed: 21,
    status: 'running',
  });
  const b = writeRecordedRun(path.join(root, 'run-b'), { steps: 7, batch: 8, groupSize: 4, seed: 22 });
  const time = new Date().toISOString();
  appendJsonl(path.join(a, 'metrics.jsonl'), [
    { step: 5, time, kind: 'eval', values: { 'reward/mean': 0.8, 'score/exact_match': 0.6 } },
    { step: 10, time, kind: 'eval', values: { 'reward/mean': 0.9, 'score/exact_match': 0.7 } },
    {
      step: 11,
      time,
      kind: 'train',
      values: { 'reward/mean': 0.7, 'loss/total': null, 'grad/norm': null },
      nonFinite: ['loss/total', 'grad/norm'],
      skipped: { reason: 'non-finite gradient' },
    },
  ] satisfies MetricsRecord[]);
  return { root, a, b };
}

async function open(root: string, runDirs: string[], state?: MetricsPanelState) {
  const sources = new RunSources((dir) => new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false }));
  cleanups.push(() => sources.dispose());
  const saved: Array<{ fileName: string; csv: string }> = [];
  const app = await openWebviewApp(browser, 'metrics', { state, viewport: { width: 1400, height: 1000 } });
  const controller = connect(
    app,
    (post) =>
      new MetricsController(
        {
          acquire: (dir) => sources.acquire(dir),
          availableRuns: () => listRuns(root).map((r) => runSummaryOf(r.dir, r.run!)),
          saveCsv: async (fileName, csv) => {
            saved.push({ fileName, csv });
            return path.join(root, fileName);
          },
        },
        post,
        runDirs,
      ),
  );
  const refresh = (dir: string) => {
    const lease = sources.acquire(dir);
    (lease.source as RunDirectorySource).refresh();
    lease.release();
  };
  return { app, page: app.page, controller, saved, refresh };
}

function chart(page: Page, group: string) {
  return page.locator(`.chart[data-group="${group}"]`);
}

async function seriesOf(page: Page, group: string): Promise<string[]> {
  return ((await chart(page, group).getAttribute('data-series')) ?? '').split('|').filter(Boolean);
}

function assertClean(app: WebviewApp): void {
  assert.deepEqual(app.violations, [], 'no CSP violations and no network');
  assert.deepEqual(app.consoleErrors, [], 'no console errors');
  assert.deepEqual(app.hostErrors, [], 'every message the webview sent was valid');
}

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  cleanups.forEach((c) => c());
  await browser?.close();
});

describe('Metrics webview', () => {
  it('draws a chart per metric group with the reward band, eval series and skipped updates', async () => {
    const { root, a } = recordedRuns();
    const { app, page } = await open(root, [a]);
    await chart(page, 'reward').locator('canvas').waitFor();
    const groups = await page.locator('.chart').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.group));
    assert.deepEqual(groups, [
      'entropy',
      'clip',
      'tool-errors',
      'kl',
      'reward',
      'score',
      'loss',
      'grad',
      'lr',
      'length',
      'tool-calls',
      'throughput',
      'time',
    ]);
    assert.deepEqual(
      await page
        .locator('#health-charts .chart')
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.group)),
      ['entropy', 'clip', 'tool-errors', 'kl'],
      'the health charts come first, in a section of their own',
    );
    assert.equal(
      await page.locator('#warnings').isVisible(),
      false,
      'a run without health checks has no warnings list',
    );
    assert.equal(await page.locator('#best-eval').isVisible(), false);
    assert.deepEqual(await seriesOf(page, 'reward'), [
      'reward/mean',
      'reward/outcome_mean',
      'reward/process_mean',
      'reward/mean (eval)',
    ]);
    assert.deepEqual(await seriesOf(page, 'time'), ['time/reward_s', 'time/rollout_s', 'time/step_s', 'time/update_s']);
    assert.equal(await chart(page, 'reward').getAttribute('data-bands'), '1');
    assert.equal(await chart(page, 'reward').getAttribute('data-points'), '11');
    assert.equal(await chart(page, 'loss').getAttribute('data-skipped'), '1');
    assert.match(
      (await page.locator('#summary').textContent()) ?? '',
      /11 training steps · 2 evaluations · last step 11 · skipped updates .*11 \(non-finite gradient\)/,
    );
    assert.equal(
      await chart(page, 'reward').locator('.u-legend .u-series').count(),
      1 + 4 + 2,
      'step, four lines, two band edges',
    );
    assert.equal(await chart(page, 'reward').locator('.u-legend .u-series.band-edge').count(), 2);
    assert.equal(await page.locator('#run-status').textContent(), 'running');
    assertClean(app);
  });

  it('says what the health checks found, newest first, with the best evaluation, and charts the health metrics first', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'metrics-health-'));
    const dir = writeRecordedHealthRun(path.join(root, 'run-health'));
    const { app, page, refresh } = await open(root, [dir]);
    await chart(page, 'signal').locator('canvas').waitFor();
    assert.deepEqual(
      await page
        .locator('#health-charts .chart')
        .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.group)),
      ['signal', 'entropy', 'clip', 'tool-errors', 'kl'],
    );
    assert.deepEqual(await seriesOf(page, 'signal'), ['health/zero_signal_groups', 'health/dropped_groups']);
    assert.deepEqual(await seriesOf(page, 'tool-errors'), [
      'tools/parse_error_rate',
      'tools/schema_error_rate',
      'tools/error_rate',
      'tools/error_rate (eval)',
    ]);
    assert.deepEqual(await seriesOf(page, 'kl'), ['kl/approx_update', 'kl/mean']);
    assert.equal(
      await chart(page, 'entropy').getAttribute('data-warned'),
      '6:warn 7:warn 8:warn 9:warn 10:warn 11:critical 12:warn',
      'health charts mark the warned steps',
    );
    assert.equal(await chart(page, 'reward').getAttribute('data-warned'), '', 'other charts do not');
    assert.equal(
      await page.locator('#best-eval').textContent(),
      'Best evaluation: step 8, exact_match 0.610 — checkpoints/best',
    );

    const lines = () =>
      page
        .locator('#warnings li')
        .evaluateAll((els) =>
          els.map(
            (e) =>
              `${(e as HTMLElement).dataset.severity} ${(e as HTMLElement).dataset.code} ${e.querySelector('.warning-step')!.textContent}`,
          ),
        );
    assert.deepEqual(await lines(), [
      'warn heldout_drop evaluation after step 12',
      'warn tool_errors steps 10–12 (3 steps)',
      'critical collapse step 11',
      'warn zero_signal steps 6–9 (4 steps)',
    ]);
    const collapse = page.locator('#warnings li[data-code="collapse"]');
    assert.equal(await collapse.locator('.warning-message').textContent(), HEALTH_RUN_COLLAPSE.message);
    assert.equal(await collapse.locator('.warning-advice').textContent(), `Try: ${HEALTH_RUN_COLLAPSE.advice}`);
    assert.equal(await collapse.locator('.warning-action').textContent(), `Done: ${HEALTH_RUN_COLLAPSE.action}`);
    assert.equal(await page.locator('#warnings-heading').textContent(), 'Health warnings, newest first · 1 critical');
    assert.equal(await page.locator('#warnings-more').isVisible(), false, 'four lines need no "show more"');

    // Severity colours are the theme's error and warning colours, and follow a theme change.
    const border = (code: string) =>
      page.locator(`#warnings li[data-code="${code}"]`).evaluate((e) => getComputedStyle(e).borderLeftColor);
    const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
    assert.equal(await border('collapse'), rgb(THEMES.dark['editorError-foreground']));
    assert.equal(await border('zero_signal'), rgb(THEMES.dark['editorWarning-foreground']));
    fs.mkdirSync(path.join(testOutputDir, 'screenshots'), { recursive: true });
    await page.screenshot({ path: path.join(testOutputDir, 'screenshots', 'metrics-health-dark.png') });
    await app.setTheme('light');
    await page.waitForFunction(
      (colour) =>
        getComputedStyle(document.querySelector('#warnings li[data-code="collapse"]')!).borderLeftColor === colour,
      rgb(THEMES.light['editorError-foreground']),
    );
    await chart(page, 'signal').locator('canvas').waitFor();
    await page.screenshot({ path: path.join(testOutputDir, 'screenshots', 'metrics-health-light.png') });

    // Held-out score against tool calls per trajectory, one point per evaluation in step order.
    assert.equal(
      await chart(page, 'score-vs-tools').getAttribute('data-points'),
      '0:0.4:0.22 4:1.2:0.41 8:1.9:0.61 12:4.6:0.35',
    );
    assert.equal(
      await chart(page, 'score-vs-tools').locator('h3').textContent(),
      'Held-out exact_match against tool calls per trajectory',
    );
    const trainingOrder = await page
      .locator('#charts .chart')
      .evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.group));
    assert.equal(trainingOrder[trainingOrder.indexOf('score') + 1], 'score-vs-tools', 'beside the score it explains');
    await chart(page, 'score-vs-tools').scrollIntoViewIfNeeded();
    await chart(page, 'score-vs-tools').screenshot({
      path: path.join(testOutputDir, 'screenshots', 'metrics-score-vs-tools-light.png'),
    });

    // A live step with a new critical warning goes on top; the best moves with run.json.
    const writer = recordedRunWriter(dir);
    writer.appendMetrics({
      step: 13,
      time: new Date().toISOString(),
      kind: 'train',
      values: { 'reward/mean': 0.2 },
      warnings: [
        {
          code: 'zero_signal',
          severity: 'warn',
          message: '4 of 4 groups had equal rewards: no learning signal in them',
          advice: 'raise rollout.temperature',
        },
        {
          code: 'entropy_collapse',
          severity: 'critical',
          message: 'entropy fell to 0.01',
          advice: 'raise rollout.temperature',
        },
      ],
    });
    writer.update({ best: { step: 12, metric: 'exact_match', value: 0.7, checkpoint: 'checkpoints/best' } });
    refresh(dir);
    await page.locator('#warnings li:first-child[data-code="entropy_collapse"][data-severity="critical"]').waitFor();
    assert.equal(
      await page.locator('#warnings li:nth-child(2)').getAttribute('data-code'),
      'zero_signal',
      'a warning seen again after a gap is a new line',
    );
    await page
      .locator('#best-eval', { hasText: 'Best evaluation: step 12, exact_match 0.700 — checkpoints/best' })
      .waitFor();
    assert.match((await chart(page, 'signal').getAttribute('data-warned')) ?? '', / 13:critical$/);
    // More than five lines: the older ones wait behind "Show 1 older".
    assert.equal(await page.locator('#warnings li').count(), 5);
    assert.equal(await page.locator('#warnings-more').textContent(), 'Show 1 older');
    await page.locator('#warnings-more').click();
    await page.locator('#warnings li[data-code="zero_signal"][data-step="9"]').waitFor();
    assert.equal(await page.locator('#warnings li').count(), 5 + 1);
    writer.finish('finished');
    assertClean(app);
  });

  it('grows as records are appended', async () => {
    const { root, a } = recordedRuns();
    const { app, page, refresh } = await open(root, [a]);
    await chart(page, 'reward').locator('canvas').waitFor();
    const writer = recordedRunWriter(a);
    writer.appendMetrics({
      step: 12,
      time: new Date().toISOString(),
      kind: 'train',
      values: { 'reward/mean': 1.1, 'kl/mean': 0.03, 'custom/thing': 4 },
    });
    refresh(a);
    await page.locator('.chart[data-group="reward"][data-last-step="12"]').waitFor();
    assert.equal(await chart(page, 'reward').getAttribute('data-points'), '12');
    await chart(page, 'other-custom').waitFor();
    assert.deepEqual(
      await seriesOf(page, 'other-custom'),
      ['custom/thing'],
      'a metric never seen before gets its own chart',
    );
    writer.finish('finished');
    refresh(a);
    await page.locator('#run-status', { hasText: 'finished' }).waitFor();
    assertClean(app);
  });

  it('overlays another run chosen in the run picker, and removes it again', async () => {
    const { root, a, b } = recordedRuns();
    const { app, page, controller } = await open(root, [a]);
    await chart(page, 'kl').locator('canvas').waitFor();
    await page.locator('#runs-summary').click();
    const other = page.locator(`#run-list vscode-checkbox[data-run-dir="${b}"]`);
    await other.click();
    await page.locator('.chart[data-group="kl"][data-series="run-a · kl/mean|run-b · kl/mean"]').waitFor();
    assert.deepEqual(controller.runDirs, [a, b]);
    assert.equal(await page.locator('#runs-summary').textContent(), 'Comparing 2 runs');
    const colours = ((await chart(page, 'kl').getAttribute('data-colours')) ?? '').split('|');
    assert.notEqual(colours[0], colours[1], 'compared runs have different colours');
    assert.equal(
      await page.locator(`#run-list vscode-checkbox[data-run-dir="${a}"]`).getAttribute('disabled'),
      '',
      'the panel’s own run stays',
    );
    await page.locator(`#run-list vscode-checkbox[data-run-dir="${b}"]`).click();
    await page.locator('.chart[data-group="kl"][data-series="kl/mean"]').waitFor();
    assert.deepEqual(((await app.state()) as MetricsPanelState).runDirs, [a]);
    assertClean(app);
  });

  it('smooths the lines and exports the shown data, smoothed columns included, as CSV', async () => {
    const { root, a } = recordedRuns();
    const { app, page, saved } = await open(root, [a]);
    await chart(page, 'reward').locator('canvas').waitFor();
    await page.locator('#smoothing').fill('0.6');
    await page.locator('#smoothing-value', { hasText: '0.60' }).waitFor();
    assert.equal(((await app.state()) as MetricsPanelState).smoothing, 0.6);
    await page.locator('#export-csv').click();
    await page.locator('.notice.info', { hasText: 'Saved' }).waitFor();
    assert.equal(saved.length, 1);
    assert.equal(saved[0].fileName, 'run-a-metrics.csv');
    const lines = saved[0].csv.trim().split('\n');
    const header = lines[0].split(',');
    assert.deepEqual(header.slice(0, 5), ['run', 'run_id', 'kind', 'step', 'skipped']);
    assert.ok(header.includes('reward/mean') && header.includes('reward/mean (EMA 0.60)'));
    assert.equal(lines.length, 1 + 13, 'one line per recorded row: 11 train, 2 eval');
    const rewardColumn = header.indexOf('reward/mean');
    const recorded = new RunStoreReader(a).metrics().records;
    assert.equal(Number(lines[1].split(',')[rewardColumn]), recorded[0].values['reward/mean']);
    assertClean(app);
  });

  it('takes its colours from the theme and changes them with it', async () => {
    const { root, a } = recordedRuns();
    const { app, page } = await open(root, [a]);
    await chart(page, 'throughput').locator('canvas').waitFor();
    const colours = async () => ((await chart(page, 'throughput').getAttribute('data-colours')) ?? '').split('|');
    assert.deepEqual(await colours(), [THEMES.dark['charts-blue'], THEMES.dark['charts-orange']]);
    await app.setTheme('light');
    await page
      .locator(
        `.chart[data-group="throughput"][data-colours="${THEMES.light['charts-blue']}|${THEMES.light['charts-orange']}"]`,
      )
      .waitFor();
    await app.setTheme('high-contrast');
    await page
      .locator(
        `.chart[data-group="throughput"][data-colours="${THEMES['high-contrast']['charts-blue']}|${THEMES['high-contrast']['charts-orange']}"]`,
      )
      .waitFor();
    assertClean(app);
  });

  it('says it is pinned to its run, and shows another run as its own when the host moves it (following the newest run)', async () => {
    const { root, a, b } = recordedRuns();
    const { app, page, controller } = await open(root, [a]);
    await chart(page, 'reward').locator('canvas').waitFor();
    await app.send({
      type: 'following',
      following: { followsNewest: false, newer: { dir: b, id: 'run-b', name: 'the next run' } },
    });
    await page
      .locator('#run-pin', { hasText: 'Pinned to this run; the next run (run-b) has started since.' })
      .waitFor();
    await page.locator('#follow-run').click();
    const deadline = Date.now() + 5000;
    while (
      !app.fromWebview.some((m) => JSON.stringify(m) === JSON.stringify({ type: 'followNewestRun', follow: true }))
    ) {
      assert.ok(Date.now() < deadline, 'the webview asks the host to follow the newest run');
      await page.waitForTimeout(20);
    }
    controller.replaceOwnRun(b);
    await app.send({ type: 'following', following: { followsNewest: true } });
    const points = new Set(new RunStoreReader(b).metrics().records.map((r) => r.step)).size;
    await page.locator(`#run-title[title="${b}"]`).waitFor();
    await page.locator(`.chart[data-group="reward"][data-points="${points}"]`).waitFor();
    const state = (await app.state()) as MetricsPanelState;
    assert.deepEqual(state.runDirs, [b]);
    assert.equal(state.followsNewest, true);
    assertClean(app);
  });

  it('comes back from its saved state: compared runs, smoothing and band', async () => {
    const { root, a, b } = recordedRuns();
    const state: MetricsPanelState = { runDirs: [a, b], followsNewest: false, smoothing: 0.5, band: 'std' };
    const { app, page } = await open(root, state.runDirs, state);
    await page.locator('.chart[data-group="reward"][data-bands="2"]').waitFor();
    assert.equal(await page.locator('#smoothing').inputValue(), '0.5');
    assert.equal(await page.locator('#band').getAttribute('current-value'), 'std');
    assert.ok((await seriesOf(page, 'reward')).some((s) => s.startsWith('run-b · ')));
    const legend = (await chart(page, 'reward').locator('.u-legend').textContent()) ?? '';
    assert.match(legend, /±std upper/, 'the band is mean ± std');
    assertClean(app);
  });
});
