/**
 * Re-roll From Here in a real VS Code (code-server + Chromium, the packaged .vsix installed): replay
 * a recorded run of the tiny agent, stop before a search call, edit what the tool returned (undo
 * works as in any editor), re-roll with a later checkpoint, see the branch's transcript and rewards
 * beside the original in a diff editor, reload the window and find the branch under its trajectory
 * in the Trajectories panel.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot, testOutputDir } from '../harness/paths';
import {
  addFunctionBreakpoint,
  openWorkbench,
  panelFrame,
  runCommand,
  screenshot,
  type Workbench,
} from '../harness/workbench';
import { writeTinyAgentWorkspace } from '../fixtures/tinyAgent';
import { RunStoreReader, readBranchSets } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

const EDITED = 'Nobody by that name works anywhere.';

/** The fixture workspace with a recorded run of the tiny agent (two steps, a checkpoint after each, its tool calls recorded) and a launch.json that replays it. */
async function workspaceWithRecordedRun(): Promise<string> {
  const dir = path.join(testOutputDir, 'fixtures', 'reroll');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), dir, { recursive: true });
  const config = await writeTinyAgentWorkspace(dir, { steps: 2, extraConfig: '  toolCassette: { record: true },\n' });
  fs.writeFileSync(
    config,
    fs
      .readFileSync(config, 'utf8')
      .replace('output: { checkpointEvery: 0 }', 'output: { checkpointEvery: 1, keepCheckpoints: 3 }'),
  );
  const runDir = path.join(dir, '.rollout', 'runs', 'tiny-run');
  const result = await new TrainingRun(await loadConfig(config), {
    runDir,
    inProcessDevice: true,
    log: () => undefined,
  }).run();
  assert.equal(result.run.status, 'finished');
  fs.mkdirSync(path.join(dir, '.vscode'));
  const launch = {
    version: '0.2.0',
    configurations: [
      {
        type: 'rollout',
        request: 'launch',
        name: 'Replay the tiny run',
        runDirectory: '${workspaceFolder}/.rollout/runs/tiny-run',
      },
    ],
  };
  fs.writeFileSync(path.join(dir, '.vscode', 'launch.json'), JSON.stringify(launch, null, 2));
  fs.writeFileSync(
    path.join(dir, '.vscode', 'settings.json'),
    JSON.stringify({ 'debug.toolBarLocation': 'docked' }, null, 2),
  );
  return dir;
}

describe('Re-roll From Here, in a real VS Code', () => {
  let workbench: Workbench;
  let fixture: string;
  before(async () => {
    fixture = await workspaceWithRecordedRun();
    workbench = await openWorkbench('e2e-reroll', path.relative(repoRoot, fixture));
  });
  after(() => workbench?.close());

  it('edits a tool result at a stop, re-rolls with a later checkpoint, shows the branch beside the original, and finds it after a reload', async () => {
    try {
      await rerollFromAStop();
    } catch (error) {
      console.log(`screenshot of the failure: ${await screenshot(workbench.page, 'reroll-failure.png')}`);
      throw error;
    }
  });

  async function pick(label: string | RegExp): Promise<void> {
    const { page } = workbench;
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
    await row.waitFor({ timeout: 30_000 });
    await row.click();
  }

  async function rerollFromAStop(): Promise<void> {
    const { page } = workbench;
    const runDir = path.join(workbench.workspace, '.rollout', 'runs', 'tiny-run');
    await runCommand(page, 'View: Show Run and Debug');
    await page.locator('.start-debug-action-item', { hasText: 'Replay the tiny run' }).waitFor({ timeout: 90_000 });
    await addFunctionBreakpoint(page, 'search');
    await page.locator('.start-debug-action-item .codicon-debug-start').click();
    const pendingCall = page.locator('.debug-call-stack .monaco-list-row', { hasText: 'before it runs' });
    await pendingCall.waitFor({ timeout: 90_000 });
    const tab = page.locator('.tab', { hasText: /trajectory-\d+\.rollout\.txt/ }).first();
    await tab.waitFor({ timeout: 30_000 });
    const index = Number(/trajectory-(\d+)/.exec((await tab.textContent()) ?? '')![1]);

    // Re-roll From Here: a later checkpoint (the parent came from step-0's weights), the run's temperature, one branch, and an edited result.
    await runCommand(page, 'Rollout Studio: Re-roll From Here');
    await pick('step-2');
    await page.locator('.quick-input-widget input').waitFor();
    await page.keyboard.press('Enter'); // temperature: the run's
    await page.waitForTimeout(300);
    await page.keyboard.press('Enter'); // one branch
    await pick('Edit the tool result first');

    // The recorded result in an ordinary editor: an edit can be undone, as anywhere.
    const editor = page.locator('.editor-instance .monaco-editor').first();
    await page.locator('.tab.active', { hasText: 'Untitled' }).waitFor({ timeout: 30_000 });
    const recorded = await editor.locator('.view-lines').textContent();
    await editor.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('a mistake');
    await editor.locator('.view-lines', { hasText: 'a mistake' }).waitFor();
    // Typing is undone in the steps VS Code grouped it into (here: the first character, then the rest).
    const shown = () => editor.locator('.view-lines').textContent();
    for (let undo = 0; undo < 3 && (await shown()) !== recorded; undo++) {
      await page.keyboard.press('Control+Z');
      await page.waitForTimeout(300);
    }
    assert.equal(await shown(), recorded, 'undo brings the recorded result back');
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(EDITED);
    await runCommand(page, 'Rollout Studio: Re-roll With Edited Result');

    // The original and the branch side by side, the branch's first line saying what it is.
    const diff = page.locator('.monaco-diff-editor');
    await page.locator('.tab', { hasText: '↔ branch 0' }).waitFor({ timeout: 240_000 });
    await diff.waitFor({ timeout: 30_000 });
    await diff
      .locator('.editor.modified .view-line', { hasText: 'branch 0 of step 1' })
      .first()
      .waitFor({ timeout: 30_000 });
    await diff
      .locator('.editor.original .view-line', { hasText: `═══ step 1 · #${index} · row` })
      .first()
      .waitFor({ timeout: 30_000 });
    await diff
      .locator('.editor.modified .view-line', { hasText: 'rewards: outcome' })
      .first()
      .waitFor({ timeout: 30_000 });
    const sets = readBranchSets(runDir);
    assert.equal(sets.length, 1);
    assert.deepEqual(
      [sets[0].parent.step, sets[0].parent.index, sets[0].cut.at, sets[0].checkpoint.spec],
      [1, index, 'call', 'step-000002'],
    );
    assert.deepEqual(sets[0].edits, [{ kind: 'result', call: 0, text: EDITED }]);
    const call = sets[0].branches[0].trajectory.turns.flatMap((t) => t.toolCalls ?? [])[0];
    assert.equal(call.observation, EDITED, 'the policy saw the edited result');
    // For the picture: the diff alone, at the edited result and what the policy did with it.
    await diff.locator('.editor.modified .view-lines').click();
    await page.keyboard.press('Control+J'); // the panel
    await page.keyboard.press('Control+B'); // the side bar
    await page
      .locator('.part.panel')
      .waitFor({ state: 'hidden', timeout: 10_000 })
      .catch(() => undefined);
    await diff.locator('.editor.modified .view-lines').click();
    await page.keyboard.press('Control+F');
    await page.keyboard.insertText('Nobody by that name');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Escape');
    await diff.locator('.editor.modified .view-line', { hasText: EDITED }).first().waitFor({ timeout: 30_000 });
    await page.waitForTimeout(800);
    const shot = await screenshot(page, 'reroll-side-by-side.png');
    console.log(`screenshot: ${shot}`);

    // The branch survives a reload: it is in the run store, listed under its trajectory.
    await page.keyboard.press('Shift+F5'); // Debug: Stop (the docked toolbar went with the side bar)
    await page
      .locator('.statusbar.debugging')
      .waitFor({ state: 'detached', timeout: 30_000 })
      .catch(() => undefined);
    await page.waitForTimeout(10_000);
    await page.evaluate(async () => {
      for (const registration of await navigator.serviceWorker.getRegistrations()) await registration.unregister();
    });
    await page.reload();
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    await runCommand(page, 'Rollout Studio: Open Trajectories');
    const view = await panelFrame(page, 'trajectories', 90_000);
    await view.locator('#row-count').waitFor({ timeout: 60_000 });
    await view.locator('#step-previous').click();
    await view.waitForFunction(() => document.querySelector<HTMLInputElement>('#step')?.value === '1');
    await view
      .locator('.vt-window .vt-row')
      .filter({ has: view.locator('.vt-cell[data-column="index"]', { hasText: new RegExp(`^${index}$`) }) })
      .first()
      .click();
    await view.locator('#branches li.branch').first().waitFor({ timeout: 60_000 });
    assert.match(
      (await view.locator('#branches li.branch').first().textContent()) ?? '',
      /branch 0 from before turn 0's results · result of call 0 edited · step-000002/,
    );
    assert.equal(
      new RunStoreReader(runDir).trajectories(1).records.length,
      4,
      'the run’s own records are as they were',
    );
  }
});
