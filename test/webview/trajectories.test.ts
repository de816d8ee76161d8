/**
 * The built Trajectories webview (dist/webview/trajectories.js) in Chromium, fed by the real
 * host-side controller reading a recorded run: rows, sorting, filters, the detail of a
 * trajectory, its token colours, live appends and the state kept across a reload.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { RunDirectorySource } from '../../extension/panels/source/runDirectorySource';
import { TrajectoriesController } from '../../extension/panels/trajectoriesController';
import { RunStoreReader } from '#trainer/contract/runstore';
import type { StepSelection, TrajectoriesPanelState } from '#trainer/contract/protocol';
import { colourTokens, decodeTokens } from '../../webview/trajectories/tokenColours';
import { buildTrajectory, writeRecordedRun, recordedRunWriter } from '../fixtures/recordedRun';
import { launchBrowser } from '../harness/browser';
import { connect, openWebviewApp, type Theme, type WebviewApp } from '../harness/webviewApp';

let browser: Browser;
const opened: Array<{ app: WebviewApp; source: RunDirectorySource }> = [];

function recordedRun(options: { steps: number; batch: number; status?: 'running' | 'finished' }): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'trajectories-dom-'));
  return writeRecordedRun(path.join(root, 'run-dom'), { groupSize: 4, seed: 11, status: 'running', ...options });
}

async function open(
  dir: string,
  options: {
    state?: TrajectoriesPanelState;
    step?: StepSelection;
    theme?: Theme;
    openInDebugger?: () => Promise<void>;
    reroll?: () => void;
    trusted?: () => boolean;
  } = {},
) {
  const source = new RunDirectorySource(dir, { pollIntervalMs: 0, watch: false });
  const app = await openWebviewApp(browser, 'trajectories', { state: options.state, theme: options.theme });
  const controller = connect(
    app,
    (post) =>
      new TrajectoriesController(
        source,
        post,
        {
          openInDebugger:
            options.openInDebugger ??
            (async () => Promise.reject(new Error('Open in Debugger needs the replay debugger'))),
          ...(options.reroll ? { reroll: options.reroll } : {}),
          ...(options.trusted ? { trusted: options.trusted } : {}),
        },
        options.step ?? options.state?.step ?? 'follow',
      ),
  );
  opened.push({ app, source });
  return { app, source, controller, page: app.page };
}

/**
 * The step box's value once it has settled on `expected` (or what it shows after 2 s): the
 * toolkit's text field renders its value a frame after the rows it belongs to.
 */
async function stepShown(page: Page, expected: string): Promise<string> {
  const input = page.locator('#step input');
  const deadline = Date.now() + 2000;
  let value = await input.inputValue();
  while (value !== expected && Date.now() < deadline) {
    await page.waitForTimeout(50);
    value = await input.inputValue();
  }
  return value;
}

function assertClean(app: WebviewApp): void {
  assert.deepEqual(app.violations, [], 'no CSP violations and no network');
  assert.deepEqual(app.consoleErrors, [], 'no console errors');
  assert.deepEqual(app.hostErrors, [], 'every message the webview sent was valid');
}

async function until(probe: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

let seed = 99;
const rng = () => (seed = (seed * 48271) % 2147483647) / 2147483647;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  for (const { source } of opened) source.dispose();
  await browser?.close();
});

describe('Trajectories webview', () => {
  it('shows the newest step’s trajectories as rows with their numbers', async () => {
    const dir = recordedRun({ steps: 3, batch: 24 });
    const { app, page, source } = await open(dir);
    await page.locator('#row-count', { hasText: '24 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '3'), '3');
    assert.equal(await page.locator('#run-title').textContent(), 'Trajectories · multihop-search (recorded fixture)');
    assert.equal(await page.locator('.vt').getAttribute('aria-rowcount'), '24');
    const rows = source.rows(3);
    const first = page.locator('.vt-window .vt-row[data-key="0"]');
    assert.equal(await first.locator('[data-column="reward"]').textContent(), rows[0].reward.toFixed(3));
    assert.equal(await first.locator('[data-column="toolCalls"]').textContent(), String(rows[0].toolCalls));
    assert.equal(await first.locator('[data-column="errors"]').textContent(), String(rows[0].errors));
    assert.equal(await first.locator('[data-column="finishReason"]').textContent(), rows[0].finishReason);
    assertClean(app);
  });

  it('renders only the rows in view of a large step, and the others as it scrolls', async () => {
    const dir = recordedRun({ steps: 1, batch: 1500 });
    const { app, page } = await open(dir);
    await page.locator('#row-count', { hasText: '1500 trajectories' }).waitFor();
    const rendered = await page.locator('.vt-window .vt-row').count();
    assert.ok(rendered > 10 && rendered < 120, `${rendered} rows in the DOM for 1500 trajectories`);
    await page.locator('.vt-viewport').evaluate((el) => (el.scrollTop = el.scrollHeight));
    await page.locator('.vt-window .vt-row[data-key="1499"]').waitFor();
    assert.ok((await page.locator('.vt-window .vt-row').count()) < 120);
    assertClean(app);
  });

  it('sorts by a clicked column and filters by text, reward range, errors and finish reason', async () => {
    const dir = recordedRun({ steps: 2, batch: 40 });
    const { app, page, source } = await open(dir);
    await page.locator('#row-count', { hasText: '40 trajectories' }).waitFor();
    const rows = source.rows(2);
    const shownKeys = () =>
      page.locator('.vt-window .vt-row').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.key)));

    await page.locator('.vt-head[data-column="reward"]').click();
    assert.equal(await page.locator('.vt-head[data-column="reward"]').getAttribute('aria-sort'), 'descending');
    // The rows in the DOM are the first ones of the sorted order (the rest are not rendered).
    const startsWith = async (expected: number[]) => {
      const shown = await shownKeys();
      assert.ok(shown.length >= 20, `${shown.length} rows rendered`);
      assert.deepEqual(shown, expected.slice(0, shown.length));
    };
    await startsWith([...rows].sort((a, b) => b.reward - a.reward || a.index - b.index).map((r) => r.index));
    await page.locator('.vt-head[data-column="reward"]').click();
    await startsWith([...rows].sort((a, b) => a.reward - b.reward || a.index - b.index).map((r) => r.index));

    await page.locator('#reward-min input').fill('1');
    const atLeastOne = rows.filter((r) => r.reward >= 1).length;
    await page.locator('#row-count', { hasText: `${atLeastOne} of 40 trajectories` }).waitFor();
    await page.locator('#reward-min input').fill('one');
    assert.equal(await page.locator('#reward-min').getAttribute('class'), 'invalid');
    await page.locator('#reward-min input').fill('');

    await page.locator('#errors-filter').click();
    await page.locator('#errors-filter vscode-option', { hasText: 'With tool errors' }).click();
    const withErrors = rows.filter((r) => r.errors > 0);
    await page.locator('#row-count', { hasText: `${withErrors.length} of 40 trajectories` }).waitFor();
    assert.deepEqual(
      (await shownKeys()).sort((a, b) => a - b),
      withErrors.map((r) => r.index),
    );

    await page.locator('#search input').fill(rows[5].rowId);
    const matching = withErrors.filter((r) => r.rowId.includes(rows[5].rowId) || r.prompt.includes(rows[5].rowId));
    await page.locator('#row-count', { hasText: `${matching.length} of 40 trajectories` }).waitFor();
    await page.locator('vscode-button', { hasText: 'Clear Filters' }).click();
    await page.locator('#row-count', { hasText: '40 trajectories' }).waitFor();

    const state = (await app.state()) as TrajectoriesPanelState;
    assert.deepEqual(state.sort, { column: 'reward', direction: 'asc' });
    assert.equal(state.runDir, dir);
    assertClean(app);
  });

  it('shows a trajectory’s turns, tool calls with arguments, results and errors, and its rewards', async () => {
    const dir = recordedRun({ steps: 2, batch: 32 });
    const { app, page } = await open(dir);
    const records = new RunStoreReader(dir).trajectories(2).records;
    // A trajectory with a failed tool call, so the detail must show an error.
    const record = records.find((r) => r.turns.some((t) => t.toolCalls?.some((c) => c.error)))!;
    await page.locator(`.vt-window .vt-row[data-key="${record.index}"]`).click();
    const detail = page.locator(`#detail .detail-body[data-index="${record.index}"]`);
    await detail.waitFor();
    assert.ok(
      app.fromWebview.some(
        (m) =>
          JSON.stringify(m) === JSON.stringify({ type: 'openTrajectory', set: 'train', step: 2, index: record.index }),
      ),
    );
    assert.equal(await detail.locator('[data-field="outcome"]').textContent(), String(record.rewards.outcome));
    assert.equal(
      await detail.locator('[data-field="total"]').textContent(),
      Number.isInteger(record.rewards.total) ? String(record.rewards.total) : record.rewards.total.toFixed(3),
    );
    assert.equal(await detail.locator('[data-field="advantage"]').textContent(), record.advantage!.toFixed(3));
    assert.equal(await detail.locator('article.turn').count(), record.turns.length);
    const calls = record.turns.flatMap((t) => t.toolCalls ?? []);
    assert.equal(await detail.locator('.tool-call').count(), calls.length);
    const failed = calls.filter((c) => c.error);
    const failedBoxes = detail.locator('.tool-call.failed');
    assert.equal(await failedBoxes.count(), failed.length);
    for (let i = 0; i < failed.length; i++) {
      const box = failedBoxes.nth(i);
      assert.equal(await box.getAttribute('data-error-kind'), failed[i].error!.kind);
      assert.equal(await box.locator('.error-message').textContent(), failed[i].error!.message);
      assert.match((await box.locator('header').textContent()) ?? '', new RegExp(`${failed[i].latencyMs} ms`));
    }
    const ok = calls.find((c) => !c.error)!;
    const okBox = detail.locator('.tool-call:not(.failed)').first();
    assert.equal(await okBox.locator('.tool-args').textContent(), JSON.stringify(ok.arguments, null, 2));
    assert.equal(await okBox.locator('.observation').textContent(), ok.observation);
    assert.match((await okBox.locator('header').textContent()) ?? '', /process reward (0\.200|—|0)/);
    assertClean(app);
  });

  it('colours the tokens by advantage, log-prob or entropy, masked tokens shown as such', async () => {
    const dir = recordedRun({ steps: 1, batch: 8 });
    const { app, page } = await open(dir);
    const record = new RunStoreReader(dir).trajectories(1).records[3];
    const tokens = decodeTokens(record.tokens);
    await page.locator('.vt-window .vt-row[data-key="3"]').click();
    await page.locator('.tokens .tok').first().waitFor();
    const classes = () =>
      page.locator('.tokens .tok').evaluateAll((els) => els.map((e) => e.className.replace(/^tok /, '')));
    assert.deepEqual(await classes(), colourTokens(tokens, 'advantage').classes);
    const masked = await page.locator('.tokens .tok.masked').count();
    assert.equal(masked, tokens.mask.filter((m) => m === 0).length);
    assert.ok(masked > 0 && masked < tokens.pieces.length);

    await page.locator('#colour-by').click();
    await page.locator('#colour-by vscode-option', { hasText: 'Log-prob' }).click();
    await page.locator('.tokens[data-colour-by="logprob"]').waitFor();
    const logprobClasses = await classes();
    assert.deepEqual(logprobClasses, colourTokens(tokens, 'logprob').classes);
    assert.ok(
      logprobClasses.some((c) => /^seq-[1-4]$/.test(c)),
      'some policy tokens are coloured',
    );
    assert.ok((await page.locator('#token-legend .legend-entry').count()) >= 6);
    assert.match((await page.locator('#token-legend').textContent()) ?? '', /not generated by the policy/);

    const policyIndex = tokens.mask.findIndex((m) => m === 1);
    await page.locator(`.tokens .tok[data-i="${policyIndex}"]`).hover();
    assert.match(
      (await page.locator('#token-info').textContent()) ?? '',
      new RegExp(`token ${policyIndex} .* log-prob ${tokens.logprobs[policyIndex].toFixed(3)}`),
    );
    assert.equal(((await app.state()) as TrajectoriesPanelState).colourBy, 'logprob');
    assertClean(app);
  });

  it('grows as trajectories arrive, follows a new step, and stays on a pinned one', async () => {
    const dir = recordedRun({ steps: 2, batch: 8 });
    const { app, page, source } = await open(dir);
    await page.locator('#row-count', { hasText: '8 trajectories' }).waitFor();
    const writer = recordedRunWriter(dir);
    writer.appendTrajectories(2, [buildTrajectory(2, 8, 4, rng)]);
    source.refresh();
    await page.locator('#row-count', { hasText: '9 trajectories' }).waitFor();
    await page.locator('.vt-window .vt-row[data-key="8"]').waitFor();

    writer.appendTrajectories(3, [buildTrajectory(3, 0, 4, rng), buildTrajectory(3, 1, 4, rng)]);
    source.refresh();
    await page.locator('#row-count', { hasText: '2 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '3'), '3');
    assert.equal(await page.locator('#step-range').textContent(), 'of 1–3 (3 steps)');

    await page.locator('#step-previous').click();
    await page.locator('#row-count', { hasText: '9 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '2'), '2');
    assert.equal(await page.locator('#follow').getAttribute('aria-checked'), 'false');
    writer.appendTrajectories(4, [buildTrajectory(4, 0, 4, rng)]);
    source.refresh();
    await page.locator('#step-range', { hasText: 'of 1–4 (4 steps)' }).waitFor();
    assert.equal(await stepShown(page, '2'), '2', 'a pinned step stays');

    await page.locator('#follow').click();
    await page.locator('#row-count', { hasText: '1 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '4'), '4');
    assertClean(app);
  });

  it('shows the held-out evaluations beside the training steps, with the task metric named', async () => {
    const dir = recordedRun({ steps: 2, batch: 8 });
    const writer = recordedRunWriter(dir);
    const evaluation = (step: number, rows: number) =>
      Array.from({ length: rows }, (_, i) => ({ ...buildTrajectory(step, i, 1, rng), advantage: undefined }));
    writer.writeEvaluation(0, evaluation(0, 5));
    writer.writeEvaluation(2, evaluation(2, 3));
    const { app, page } = await open(dir);
    await page.locator('#row-count', { hasText: '8 trajectories' }).waitFor();
    await page.locator('#evaluation').click();
    assert.deepEqual(await page.locator('#evaluation vscode-option').allTextContents(), [
      'Training steps',
      'Evaluation before RL',
      'Evaluation after step 2',
    ]);
    await page.locator('#evaluation vscode-option', { hasText: 'Evaluation before RL' }).click();
    await page.locator('#row-count', { hasText: '5 trajectories' }).waitFor();
    assert.equal(await page.locator('#follow').getAttribute('aria-checked'), 'false');
    await page.locator('.vt-window .vt-row[data-key="3"]').click();
    const detail = page.locator('#detail .detail-body[data-index="3"]');
    await detail.waitFor();
    assert.match((await detail.locator('header').first().textContent()) ?? '', /evaluation before RL/);
    assert.equal(
      await detail.locator('vscode-button', { hasText: 'Open in Debugger' }).count(),
      0,
      'replay steps through training steps only',
    );
    assert.equal(await detail.locator('dt', { hasText: 'exact_match (task metric)' }).count(), 1);
    assert.deepEqual(((await app.state()) as TrajectoriesPanelState).step, { evaluation: 0 });
    await page.locator('#follow').click();
    await page.locator('#row-count', { hasText: '8 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '2'), '2');
    assertClean(app);
  });

  it('offers no Re-roll… in Restricted Mode, and offers it once the workspace is trusted', async () => {
    const dir = recordedRun({ steps: 1, batch: 4 });
    let trusted = false;
    const rerolls: unknown[] = [];
    const { app, page, controller } = await open(dir, { reroll: () => rerolls.push(1), trusted: () => trusted });
    await page.locator('.vt-window .vt-row[data-key="1"]').click();
    const detail = page.locator('#detail .detail-body[data-index="1"]');
    await detail.waitFor();
    await detail.locator('vscode-button', { hasText: 'Open in Debugger' }).waitFor();
    assert.equal(await detail.locator('vscode-button', { hasText: 'Re-roll' }).count(), 0, 'untrusted: no Re-roll…');
    trusted = true;
    controller.trustChanged();
    await page.locator('#detail vscode-button', { hasText: 'Re-roll' }).click();
    await until(() => rerolls.length === 1);
    assertClean(app);
  });

  it('says so in the panel when the debugger cannot open a trajectory', async () => {
    const dir = recordedRun({ steps: 1, batch: 4 });
    const { app, page } = await open(dir);
    await page.locator('.vt-window .vt-row[data-key="1"]').click();
    await page.locator('vscode-button', { hasText: 'Open in Debugger' }).click();
    await page.locator('.notice.error', { hasText: 'Open in Debugger needs the replay debugger' }).waitFor();
    assert.ok(
      app.fromWebview.some((m) => JSON.stringify(m) === JSON.stringify({ type: 'openInDebugger', step: 1, index: 1 })),
    );
    assertClean(app);
  });

  it('says whether it follows the newest run or is pinned, and moves to another run with nothing of the last one left', async () => {
    const dir = recordedRun({ steps: 2, batch: 8 });
    const other = writeRecordedRun(path.join(path.dirname(dir), 'run-next'), {
      steps: 3,
      batch: 4,
      groupSize: 2,
      seed: 12,
      status: 'running',
    });
    const { app, page, controller } = await open(dir);
    await page.locator('#row-count', { hasText: '8 trajectories' }).waitFor();
    const note = page.locator('#run-pin');
    const follow = page.locator('#follow-run');

    await app.send({ type: 'following', following: { followsNewest: false } });
    await note.filter({ hasText: 'Pinned to this run.' }).waitFor();
    assert.equal(await follow.getAttribute('aria-checked'), 'false');
    await app.send({
      type: 'following',
      following: { followsNewest: false, newer: { dir: other, id: 'run-next', name: 'next run' } },
    });
    await note.filter({ hasText: 'Pinned to this run; next run (run-next) has started since.' }).waitFor();
    assert.equal(((await app.state()) as TrajectoriesPanelState).followsNewest, false);

    // Ticking the box asks the host to follow; the host answers with the new state.
    await follow.click();
    await until(() =>
      app.fromWebview.some((m) => JSON.stringify(m) === JSON.stringify({ type: 'followNewestRun', follow: true })),
    );
    await app.send({ type: 'following', following: { followsNewest: true } });
    await page.waitForFunction(() => (document.getElementById('run-pin') as HTMLElement).hidden);
    assert.equal(await follow.getAttribute('aria-checked'), 'true');
    assert.equal(((await app.state()) as TrajectoriesPanelState).followsNewest, true);

    // The host moves the panel to the new run: a trajectory open in the detail closes, the new run's newest step shows.
    await page.locator('.vt-window .vt-row[data-key="3"]').click();
    await page.locator('#detail .detail-body[data-index="3"]').waitFor();
    controller.dispose();
    const source = new RunDirectorySource(other, { pollIntervalMs: 0, watch: false });
    opened.push({ app, source });
    new TrajectoriesController(source, (m) => void app.send(m), { openInDebugger: async () => {} }).start();
    await page.locator(`#run-title[title="${other}"]`).waitFor();
    await page.locator('#row-count', { hasText: '4 trajectories' }).waitFor();
    assert.equal(await stepShown(page, '3'), '3');
    assert.equal(await page.locator('#detail .detail-body').count(), 0, 'the last run’s trajectory is no longer shown');
    assert.equal(((await app.state()) as TrajectoriesPanelState).runDir, other);
    assertClean(app);
  });

  it('comes back from its saved state: pinned step, filters, sort, open trajectory, colouring', async () => {
    const dir = recordedRun({ steps: 3, batch: 16 });
    const state: TrajectoriesPanelState = {
      runDir: dir,
      followsNewest: false,
      step: 2,
      filters: { text: '', rewardMin: null, rewardMax: null, errors: 'any', tool: '', finishReason: 'answered' },
      sort: { column: 'advantage', direction: 'desc' },
      selected: 5,
      colourBy: 'entropy',
    };
    const { app, page, source } = await open(dir, { state, theme: 'light' });
    const answered = source.rows(2).filter((r) => r.finishReason === 'answered').length;
    await page.locator('#row-count', { hasText: `${answered} of 16 trajectories` }).waitFor();
    assert.equal(await stepShown(page, '2'), '2');
    assert.equal(await page.locator('.vt-head[data-column="advantage"]').getAttribute('aria-sort'), 'descending');
    await page.locator('#detail .detail-body[data-index="5"] .tokens[data-colour-by="entropy"]').waitFor();
    assert.equal(await page.locator('.vt-window .vt-row[data-key="5"]').getAttribute('aria-selected'), 'true');
    assertClean(app);
  });

  it('renders in the high-contrast theme without errors', async () => {
    const dir = recordedRun({ steps: 1, batch: 4 });
    const { app, page } = await open(dir, { theme: 'high-contrast' });
    await page.locator('.vt-window .vt-row[data-key="0"]').click();
    await page.locator('.tokens .tok').first().waitFor();
    const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(background, 'rgb(0, 0, 0)');
    assertClean(app);
  });
});
