import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { writeRecordedRun } from '../fixtures/recordedRun';
import { openWorkbench, panelFrame, runCommand, screenshot, type Workbench } from '../harness/workbench';

describe('Rollout Studio panels on a recorded run, in a real VS Code', () => {
  let workbench: Workbench;
  before(async () => {
    workbench = await openWorkbench('e2e-panels');
    writeRecordedRun(path.join(workbench.workspace, '.rollout', 'runs', 'run-e2e'), {
      steps: 8,
      batch: 24,
      groupSize: 4,
      seed: 17,
    });
  });
  after(() => workbench?.close());

  it('lists the run in the Rollout Runs view, and opens both panels when it is clicked', async () => {
    const { page } = workbench;
    const view = page.locator('.pane-header', { hasText: 'Rollout Runs' });
    await view.waitFor({ timeout: 60_000 });
    if ((await view.getAttribute('aria-expanded')) !== 'true') await view.click();
    const item = page.locator('.monaco-list-row', { hasText: 'multihop-search (recorded fixture)' });
    await item.waitFor({ timeout: 30_000 });
    assert.match((await item.textContent()) ?? '', /run-e2e · finished · step 8\/8/);
    // Clicking a run opens both of its panels, side by side.
    await item.click();
    const trajectories = await panelFrame(page, 'trajectories');
    const metrics = await panelFrame(page, 'metrics');
    await trajectories.locator('#row-count', { hasText: '24 trajectories' }).waitFor({ timeout: 60_000 });
    await metrics.locator('.chart[data-group="reward"] canvas').waitFor({ timeout: 60_000 });
    await runCommand(page, 'View: Close All Editors');
  });

  it('Open Trajectories shows the newest step’s trajectories, a trajectory’s detail and tokens', async () => {
    const { page } = workbench;
    await runCommand(page, 'Rollout Studio: Open Trajectories');
    const view = await panelFrame(page, 'trajectories');
    await view.locator('#row-count', { hasText: '24 trajectories' }).waitFor({ timeout: 60_000 });
    assert.equal(await view.locator('#step input').inputValue(), '8');
    // A trajectory with a failed tool call makes the most telling screenshot.
    const failing = view.locator('.vt-window .vt-row:has(.vt-cell.bad)').first();
    await failing.click();
    await view.locator('#detail .tokens .tok').first().waitFor();
    await view.locator('#detail .tool-call.failed').first().scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    const file = await screenshot(page, 'trajectories.png');
    console.log(`screenshot: ${file}`);

    // Open in Debugger replays the run stopped at this trajectory: the debug toolbar appears and
    // the editor shows the trajectory's transcript (the stopped frame's source).
    const index = await view.locator('#detail .detail-body').getAttribute('data-index');
    assert.match(index ?? '', /^\d+$/);
    await view.locator('vscode-button', { hasText: 'Open in Debugger' }).click();
    await page.locator('.debug-toolbar').waitFor({ timeout: 30_000 });
    await page.locator('.tab', { hasText: `trajectory-${index}.rollout.txt` }).waitFor({ timeout: 30_000 });
    await page
      .locator('.monaco-editor .view-line', { hasText: `═══ step 8 · #${index} · row` })
      .first()
      .waitFor({ timeout: 15_000 });
    // The toolbar's own Stop: typing "Debug: Stop" in the palette can land on another command.
    await page.locator('.debug-toolbar .codicon-debug-stop').click();
    await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 30_000 });
  });

  it('Open Metrics draws the run’s charts', async () => {
    const { page } = workbench;
    await runCommand(page, 'Rollout Studio: Open Metrics');
    const view = await panelFrame(page, 'metrics');
    await view.locator('.chart[data-group="reward"] canvas').waitFor({ timeout: 60_000 });
    assert.equal(await view.locator('.chart[data-group="reward"]').getAttribute('data-points'), '8');
    assert.ok((await view.locator('.chart').count()) >= 12);
    await page.waitForTimeout(300);
    const file = await screenshot(page, 'metrics.png');
    console.log(`screenshot: ${file}`);
  });

  it('brings both panels back, with their state, after the window reloads', async () => {
    const { page } = workbench;
    // The Metrics panel hides the Trajectories panel of the same group: show it, then pin a step.
    await runCommand(page, 'Rollout Studio: Open Trajectories');
    const view = await panelFrame(page, 'trajectories');
    await view.locator('#row-count', { hasText: '24 trajectories' }).waitFor({ timeout: 60_000 });
    await view.locator('#step-previous').click();
    await view.locator('#follow[aria-checked="false"]').waitFor();
    await view.waitForFunction(() => document.querySelector<HTMLInputElement>('#step')?.value === '7');
    // VS Code in the browser saves which editors are open every few seconds, not on unload.
    await page.waitForTimeout(10_000);
    // The webviews' service worker of this page would hold the reloaded webviews back
    // ("Found unexpected service worker controller"); a desktop window has none.
    await page.evaluate(async () => {
      for (const registration of await navigator.serviceWorker.getRegistrations()) await registration.unregister();
    });
    await page.reload();
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    const restored = await panelFrame(page, 'trajectories', 90_000);
    await restored.locator('#row-count', { hasText: '24 trajectories' }).waitFor({ timeout: 60_000 });
    assert.equal(await restored.locator('#step input').inputValue(), '7', 'the pinned step came back');
    assert.equal(await restored.locator('#follow').getAttribute('aria-checked'), 'false');

    await page.locator('.tab', { hasText: 'Metrics · run-e2e' }).click();
    const metrics = await panelFrame(page, 'metrics');
    await metrics.locator('.chart[data-group="reward"] canvas').waitFor({ timeout: 60_000 });
  });
});
