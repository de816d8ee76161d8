/**
 * How the panels hold up at scale, in Chromium: a step of 5,000 trajectories and a run of
 * 10,000 steps of metrics, each rendered by the built webview app (dist/webview) in the same
 * document and CSP as in VS Code, against peers measured in the same run:
 *
 *   - Trajectories: a plain, non-virtualised <table> of the same rows and cell texts (first
 *     render, an appended row re-rendered, a sort re-rendered).
 *   - Metrics: the same charts fed by re-sending every record on each update (a panel without
 *     incremental updates), against our append of the new record only.
 *
 * Times are measured inside the page, from posting the message(s) to the frame after the DOM
 * shows the result, so they include validation, state updates, layout and the next paint.
 *
 *   npm run bench:panels        (builds first; prints RESULT name=value lines)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { MetricsController } from '../../extension/panels/metricsController';
import { toMetricsColumns } from '../../extension/panels/metricsColumns';
import { RunDirectorySource } from '../../extension/panels/source/runDirectorySource';
import { RunSources } from '../../extension/panels/source/registry';
import { runSummaryOf } from '../../extension/panels/source/summarize';
import { TrajectoriesController } from '../../extension/panels/trajectoriesController';
import {
  METRICS,
  PROTOCOL_VERSION,
  type MetricsRecord,
  type TrajectoriesToWebview,
  type TrajectoryRow,
} from '../../trainer/contract/protocol';
import { appendJsonl, RunStoreWriter } from '../../trainer/contract/runstore';
import { buildTrajectory } from '../fixtures/recordedRun';
import { launchBrowser } from '../harness/browser';
import { connect, openWebviewApp } from '../harness/webviewApp';

const TRAJECTORIES = 5000;
const METRIC_STEPS = 10_000;
const REPEATS = 15;

function result(name: string, value: number, digits = 1): void {
  console.log(`RESULT ${name}=${value.toFixed(digits)}`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function timed<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const value = fn();
  return [value, performance.now() - start];
}

function newRun(root: string, id: string): RunStoreWriter {
  return RunStoreWriter.create(path.join(root, id), {
    protocol: PROTOCOL_VERSION,
    id,
    name: `bench ${id}`,
    status: 'running',
    createdAt: new Date().toISOString(),
    algorithm: 'grpo',
    device: 'cpu',
    seed: 1,
    totalSteps: METRIC_STEPS,
    model: { path: 'm', family: 'qwen3', parameters: 1, trainableParameters: 1 },
    versions: { rolloutStudio: '0.1.0', node: process.versions.node },
    config: {},
  });
}

function metricsRecord(step: number): MetricsRecord {
  const values: Record<string, number> = {};
  let k = 0;
  for (const name of Object.keys(METRICS)) values[name] = Math.sin(step / 300 + k++) + Math.random() * 0.1;
  return { step, time: new Date(Date.UTC(2026, 0, 1) + step * 1000).toISOString(), kind: 'train', values };
}

/**
 * Post `messages` inside the page and resolve with the milliseconds until `condition` (a JS
 * expression) holds and the next frame has been produced. Messages are stored in the page
 * first, so their transfer from Node is not timed.
 */
async function measure(page: Page, messages: unknown[], condition: string): Promise<number> {
  await page.evaluate(`window.__benchMessages = ${JSON.stringify(messages)}; undefined`);
  return page.evaluate(`(async () => {
    const t0 = performance.now();
    for (const m of window.__benchMessages) window.postMessage(m, '*');
    await new Promise((resolve, reject) => {
      const deadline = t0 + 60000;
      const check = () => ((${condition}) ? resolve() : performance.now() > deadline ? reject(new Error('timed out: ${condition.replace(/'/g, "\\'")}')) : requestAnimationFrame(check));
      check();
    });
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - t0;
  })()`);
}

/** The peer: every row as a <tr> of a plain table, with the same cell texts as our table. */
const PLAIN_TABLE = `(rows) => {
  const f = (v) => (v === undefined ? '—' : v.toFixed(3));
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const t of ['#', 'Prompt', 'Reward', 'Outcome', 'Process', 'Advantage', 'Turns', 'Tools', 'Errors', 'Length', 'Finish']) head.insertCell().textContent = t;
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const v of [String(r.index), r.prompt, f(r.reward), f(r.outcome), f(r.process), f(r.advantage), String(r.turns), String(r.toolCalls), String(r.errors), String(r.responseLength), r.finishReason]) tr.insertCell().textContent = v;
  }
  return table;
}`;

async function plainTable(page: Page, rows: TrajectoryRow[]): Promise<number> {
  await page.evaluate(`window.__benchRows = ${JSON.stringify(rows)}; undefined`);
  return page.evaluate(`(async () => {
    const t0 = performance.now();
    const host = document.getElementById('plain') ?? Object.assign(document.createElement('div'), { id: 'plain' });
    document.getElementById('app').replaceChildren(host);
    host.replaceChildren((${PLAIN_TABLE})(window.__benchRows));
    document.body.offsetHeight;
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - t0;
  })()`);
}

async function benchTrajectories(root: string): Promise<void> {
  const writer = newRun(root, 'traj');
  let seed = 7;
  const rng = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
  const trajectories = Array.from({ length: TRAJECTORIES }, (_, i) => buildTrajectory(1, i, 8, rng));
  writer.appendTrajectories(1, trajectories);
  const fileMb = fs.statSync(path.join(writer.dir, 'rollouts', 'step-000001.jsonl')).size / 2 ** 20;
  console.log(`trajectories: ${TRAJECTORIES} in one step, ${fileMb.toFixed(1)} MiB on disk`);

  // Host side: read, validate and summarise the step (what the extension does when the panel
  // opens). The first part is read at once, the rest a part at a time between other work.
  const source = new RunDirectorySource(writer.dir, { pollIntervalMs: 0, watch: false });
  const readStart = performance.now();
  const [firstPart, firstPartMs] = timed(() => source.rows(1).length);
  result('trajectories_host_first_part_ms', firstPartMs);
  result('trajectories_host_first_part_rows', firstPart, 0);
  await source.whenRead(1);
  result('trajectories_host_read_all_ms', performance.now() - readStart);
  const rows = [...source.rows(1)];
  if (rows.length !== TRAJECTORIES) throw new Error(`read ${rows.length} rows, expected ${TRAJECTORIES}`);
  const [snapshot, snapshotMs] = timed(() => {
    const posted: TrajectoriesToWebview[] = [];
    const controller = new TrajectoriesController(source, (m) => posted.push(m), {
      openInDebugger: async () => undefined,
    });
    controller.receive({ type: 'ready' });
    controller.dispose();
    return posted;
  });
  result('trajectories_host_snapshot_ms', snapshotMs);
  result('trajectories_snapshot_messages', snapshot.length, 0);
  result('trajectories_snapshot_mib', JSON.stringify(snapshot).length / 2 ** 20, 2);

  const browser = await launchBrowser();
  try {
    const app = await openWebviewApp(browser, 'trajectories', { viewport: { width: 1400, height: 900 } });
    const page = app.page;
    const firstRender = await measure(
      page,
      snapshot,
      `document.getElementById('row-count')?.textContent === '${TRAJECTORIES} trajectories' && document.querySelectorAll('.vt-window .vt-row').length > 0`,
    );
    result('trajectories_first_render_ms', firstRender);
    const domRows = await page.evaluate(`document.querySelectorAll('.vt-window .vt-row').length`);
    result('trajectories_rows_in_dom', domRows as number, 0);

    // Live appends: one new trajectory at a time, as a trainer would write them.
    const appends: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      const row = { ...rows[i], index: TRAJECTORIES + i };
      const message: TrajectoriesToWebview = {
        type: 'rows',
        set: 'train',
        step: 1,
        selection: 'follow',
        reset: false,
        rows: [row],
      };
      appends.push(
        await measure(
          page,
          [message],
          `document.getElementById('row-count')?.textContent === '${TRAJECTORIES + i + 1} trajectories'`,
        ),
      );
    }
    result('trajectories_append_update_ms', median(appends));

    const sorts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const direction = i % 2 === 0 ? 'descending' : 'ascending';
      sorts.push(
        await page.evaluate(`(async () => {
          const t0 = performance.now();
          document.querySelector('.vt-head[data-column="reward"]').click();
          await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
          if (document.querySelector('.vt-head[data-column="reward"]').getAttribute('aria-sort') !== '${direction}') throw new Error('not sorted');
          return performance.now() - t0;
        })()`),
      );
    }
    result('trajectories_sort_ms', median(sorts));

    const scrolls: number[] = [];
    for (const position of [2500, 4000, 100, 3300, 1200]) {
      scrolls.push(
        await page.evaluate(`(async () => {
          const t0 = performance.now();
          const viewport = document.querySelector('.vt-viewport');
          viewport.scrollTop = ${position} * 24;
          await new Promise((resolve) => { const check = () => document.querySelector('.vt-window .vt-row[data-position="${position}"]') ? resolve() : requestAnimationFrame(check); check(); });
          await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
          return performance.now() - t0;
        })()`),
      );
    }
    result('trajectories_scroll_to_row_ms', median(scrolls));

    // Detail: the host reads the one record from disk and the webview draws turns and tokens.
    // (Connecting replays the webview's `ready`: the host sends the step again; let that settle.)
    connect(app, (post) => new TrajectoriesController(source, post, { openInDebugger: async () => undefined }));
    await page.waitForTimeout(2000);
    await page.evaluate(`document.querySelector('.vt-viewport').scrollTop = 0; undefined`);
    const details: number[] = [];
    for (const nth of [0, 5, 10, 15, 20]) {
      const start = performance.now();
      await page.locator('.vt-window .vt-row').nth(nth).click();
      await page.locator('#detail .tokens .tok').first().waitFor();
      details.push(performance.now() - start);
    }
    result('trajectories_detail_open_ms', median(details));
    assertNoProblems('trajectories', app.violations, app.consoleErrors);

    // Peer, in a fresh page of the same document and stylesheet.
    const peerApp = await openWebviewApp(browser, 'trajectories', { viewport: { width: 1400, height: 900 } });
    const peerFirst = await plainTable(peerApp.page, rows);
    result('plain_table_first_render_ms', peerFirst);
    result(
      'plain_table_rows_in_dom',
      (await peerApp.page.evaluate(`document.querySelectorAll('#plain tbody tr').length`)) as number,
      0,
    );
    const peerAppends: number[] = [];
    for (let i = 0; i < 5; i++)
      peerAppends.push(
        await plainTable(peerApp.page, [
          ...rows,
          ...rows.slice(0, i + 1).map((r, j) => ({ ...r, index: TRAJECTORIES + j })),
        ]),
      );
    result('plain_table_append_update_ms', median(peerAppends));
    const peerSorts: number[] = [];
    for (let i = 0; i < 4; i++)
      peerSorts.push(
        await plainTable(
          peerApp.page,
          [...rows].sort((a, b) => (i % 2 ? a.reward - b.reward : b.reward - a.reward) || a.index - b.index),
        ),
      );
    result('plain_table_sort_ms', median(peerSorts));

    result('ratio_first_render_plain_over_virtualised', peerFirst / firstRender, 2);
    result('ratio_append_plain_over_virtualised', median(peerAppends) / median(appends), 2);
    result('ratio_sort_plain_over_virtualised', median(peerSorts) / median(sorts), 2);
  } finally {
    await browser.close();
    source.dispose();
  }
}

async function benchMetrics(root: string): Promise<void> {
  const writer = newRun(root, 'metrics');
  const records = Array.from({ length: METRIC_STEPS }, (_, i) => metricsRecord(i + 1));
  // One write for all rows (the writer would fsync each); the reader validates every one.
  appendJsonl(path.join(writer.dir, 'metrics.jsonl'), records);
  console.log(`metrics: ${METRIC_STEPS} steps × ${Object.keys(METRICS).length} metrics`);
  const [source, readMs] = timed(() => new RunDirectorySource(writer.dir, { pollIntervalMs: 0, watch: false }));
  result('metrics_host_read_ms', readMs);
  const [, columnsMs] = timed(() => toMetricsColumns(source.metrics()));
  result('metrics_host_columns_ms', columnsMs);
  const sources = new RunSources(() => source);
  const posted: unknown[] = [];
  const controller = new MetricsController(
    {
      acquire: (d) => sources.acquire(d),
      availableRuns: () => [runSummaryOf(writer.dir, source.run())],
      saveCsv: async () => undefined,
    },
    (m) => posted.push(m),
    [writer.dir],
  );
  controller.receive({ type: 'ready' });
  result('metrics_snapshot_mib', JSON.stringify(posted).length / 2 ** 20, 2);

  const browser = await launchBrowser();
  try {
    const app = await openWebviewApp(browser, 'metrics', { viewport: { width: 1400, height: 1000 } });
    const page = app.page;
    const charts = `document.querySelectorAll('.chart').length`;
    const allAt = (points: number) =>
      `document.querySelectorAll('.chart').length >= 12 && [...document.querySelectorAll('.chart')].every((c) => c.dataset.points === '${points}')`;
    const first = await measure(page, posted, allAt(METRIC_STEPS));
    result('metrics_first_render_ms', first);
    result('metrics_charts', (await page.evaluate(charts)) as number, 0);

    const runDir = path.resolve(writer.dir);
    const appends: number[] = [];
    for (let i = 0; i < REPEATS; i++) {
      const record = metricsRecord(METRIC_STEPS + i + 1);
      appends.push(
        await measure(
          page,
          [{ type: 'metrics', runDir, reset: false, columns: toMetricsColumns([record]) }],
          allAt(METRIC_STEPS + i + 1),
        ),
      );
      records.push(record);
    }
    result('metrics_append_update_ms', median(appends));

    // Peer: the same update made by re-sending every record.
    const resends: number[] = [];
    for (let i = 0; i < 5; i++) {
      const record = metricsRecord(records.length + 1);
      records.push(record);
      resends.push(
        await measure(
          page,
          [{ type: 'metrics', runDir, reset: true, columns: toMetricsColumns(records) }],
          allAt(records.length),
        ),
      );
    }
    result('metrics_full_resend_update_ms', median(resends));
    result('ratio_update_resend_over_append', median(resends) / median(appends), 2);

    const smoothing: number[] = [];
    for (const value of ['0.6', '0.9', '0']) {
      smoothing.push(
        await page.evaluate(`(async () => {
          const t0 = performance.now();
          const slider = document.getElementById('smoothing');
          slider.value = '${value}';
          slider.dispatchEvent(new Event('input'));
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))));
          return performance.now() - t0;
        })()`),
      );
    }
    result('metrics_smoothing_change_ms', median(smoothing));
    assertNoProblems('metrics', app.violations, app.consoleErrors);
  } finally {
    await browser.close();
    controller.dispose();
  }
}

function assertNoProblems(what: string, violations: string[], errors: string[]): void {
  if (violations.length || errors.length)
    throw new Error(`${what} webview reported problems: ${[...violations, ...errors].join('; ')}`);
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'panels-bench-'));
  console.log(
    `Chromium (playwright-core) on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.versions.node}`,
  );
  try {
    await benchTrajectories(root);
    await benchMetrics(root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
