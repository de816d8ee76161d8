/**
 * What a user sees around a training in a real VS Code (code-server + Chromium, the packaged
 * .vsix installed), from the command palette: Start Training opens the live Trajectories panel
 * by itself, following the run, and it fills with rows; Stop, then Debug Training moves that
 * panel to the new run; and a transcript the debugger opened shows the call's result and the
 * rewards once its step is recorded and the session has ended — not "not run yet".
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot, testOutputDir } from '../harness/paths';
import {
  addFunctionBreakpoint,
  openWorkbench,
  readPanel,
  runCommand,
  screenshot,
  type Workbench,
} from '../harness/workbench';
import { writeTinyAgentWorkspace } from '../fixtures/tinyAgent';
import { processAlive, readRun, runsOf } from '../helpers/liveTraining';

/** Enough steps that Stop always comes while the run still trains (a step takes about a second here when the machine is quiet). */
const STEPS = 40;

async function workspaceWithTinyAgent(): Promise<string> {
  const dir = path.join(testOutputDir, 'fixtures', 'live-follow-through');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), dir, { recursive: true });
  await writeTinyAgentWorkspace(dir, { steps: STEPS });
  return dir;
}

async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Trainer processes training this config (found by their command line). */
function trainersOf(config: string): number[] {
  return fs.readdirSync('/proc').flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return [];
    try {
      const argv = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      return argv.includes('train') && argv.includes(config) ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

describe('Start Training, Stop, Debug Training: the panels and transcripts follow', () => {
  let workbench: Workbench;
  let config: string;
  before(async () => {
    const fixture = await workspaceWithTinyAgent();
    workbench = await openWorkbench('e2e-live-follow-through', path.relative(repoRoot, fixture));
    config = path.join(workbench.workspace, 'tiny.config.ts');
  });
  after(() => workbench?.close());

  /** On failure: a screenshot and the debug console, then the error. */
  async function explained(name: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      console.log(`screenshot of the failure: ${await screenshot(workbench.page, `${name}-failure.png`)}`);
      console.log(
        `debug console:\n${(await workbench.page.locator('.repl .monaco-list-row').allTextContents()).join('\n')}`,
      );
      throw error;
    }
  }

  /** Stop Training from the palette, and wait for the trainer to exit. */
  async function stopTraining(): Promise<void> {
    const trainers = trainersOf(config);
    assert.ok(trainers.length > 0, 'a trainer is running');
    await runCommand(workbench.page, 'Rollout Studio: Stop Training');
    await until('the trainer to exit', () => trainers.every((pid) => !processAlive(pid)), 90_000);
  }

  /** The run the open Trajectories panel shows (its title holds the run directory). */
  const trajectoriesRun = () =>
    readPanel(
      workbench.page,
      'trajectories',
      async (frame) => frame.locator('#run-title').getAttribute('title', { timeout: 5000 }),
      60_000,
    );

  it('Start Training opens the live Trajectories panel, following the run, and it fills with rows; Metrics opens beside it', () =>
    explained('follow-start', async () => {
      const { page } = workbench;
      await runCommand(page, 'Rollout Studio: Start Training');
      const runDir = await until('the run directory', () => runsOf(workbench.workspace).at(-1), 120_000);

      // No click anywhere: the panel opened with the run.
      await page.locator('.tab', { hasText: 'Trajectories ·' }).first().waitFor({ timeout: 90_000 });
      await readPanel(
        page,
        'trajectories',
        (frame) => frame.locator('#row-count', { hasText: '4 trajectories' }).waitFor({ timeout: 60_000 }),
        120_000,
      );
      assert.equal(await trajectoriesRun(), runDir);
      assert.equal(
        await readPanel(page, 'trajectories', (frame) =>
          frame.locator('#follow-run').getAttribute('aria-checked', { timeout: 5000 }),
        ),
        'true',
      );
      const rewards = await readPanel(page, 'trajectories', (frame) =>
        frame.locator('.vt-window .vt-row .vt-cell[data-column="reward"]').allTextContents(),
      );
      assert.ok(
        rewards.length >= 1 && rewards.every((r) => /^-?\d+\.\d+$/.test(r.trim())),
        `rewards: ${rewards.join(', ')}`,
      );
      await page.locator('.tab', { hasText: 'Metrics ·' }).first().waitFor({ timeout: 30_000 });
      assert.equal(readRun(runDir).status, 'running', 'the panel showed rows while the run trained');
      console.log(`screenshot: ${await screenshot(page, 'follow-start.png')}`);
      await stopTraining();
      assert.equal(readRun(runDir).status, 'stopped');
    }));

  it('Debug Training after Stop moves the open panel to the new run; the transcript shows the final result once the session has ended', () =>
    explained('follow-debug', async () => {
      const { page } = workbench;
      const stoppedRun = runsOf(workbench.workspace).at(-1)!;
      await addFunctionBreakpoint(page, 'search');
      await runCommand(page, 'Rollout Studio: Debug Training');
      await page
        .locator('.debug-call-stack .monaco-list-row', { hasText: 'before it runs' })
        .waitFor({ timeout: 120_000 });
      const runDir = runsOf(workbench.workspace).at(-1)!;
      assert.notEqual(runDir, stoppedRun);

      // The panels that followed the stopped run show the new one; none stayed on the old one.
      const trajectoriesTab = page.locator('.tab', { hasText: `Trajectories · ${path.basename(runDir)}` });
      await trajectoriesTab.waitFor({ timeout: 60_000 });
      await page.locator('.tab', { hasText: `Metrics · ${path.basename(runDir)}` }).waitFor({ timeout: 30_000 });
      assert.equal(await page.locator('.tab', { hasText: path.basename(stoppedRun) }).count(), 0);

      // The transcript the stop opened: the call has not run.
      const transcriptTab = page.locator('.tab', { hasText: /trajectory-\d+\.rollout\.txt/ }).first();
      await transcriptTab.waitFor({ timeout: 30_000 });
      const line = (text: RegExp) => page.locator('.monaco-editor .view-line', { hasText: text }).first();
      await line(/⟨call\s0\ssearch\s·\snot\srun\syet⟩/).waitFor({ timeout: 30_000 });

      // Without the breakpoint the training goes on; once step 1 is recorded, stop it.
      await runCommand(page, 'Remove All Breakpoints');
      await runCommand(page, 'Debug: Continue');
      await until(
        'step 1 to be recorded',
        () => fs.existsSync(path.join(runDir, 'rollouts', 'step-000001.jsonl')),
        120_000,
      );
      await stopTraining();
      // The session is over when its toolbar is gone (it floats over the tabs while it lasts).
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 30_000 });

      // The transcript shows the call's result and the rewards, as the run store recorded them.
      await transcriptTab.click();
      await line(/⟨call\s0\ssearch\s·.*\d+\sms⟩/).waitFor({ timeout: 30_000 });
      await page.keyboard.press('Control+Home');
      await line(/^rewards:\soutcome\s-?\d+\.\d\d\s·\sprocess\s/).waitFor({ timeout: 15_000 });
      const shown = (await page.locator('.monaco-editor .view-line').allTextContents()).join('\n');
      assert.doesNotMatch(shown, /not\srun\syet|rewards\spending|in\sprogress/, shown);
      console.log(`screenshot: ${await screenshot(page, 'follow-transcript.png')}`);

      // The Trajectories page itself shows the new run, still following the newest run.
      await trajectoriesTab.click();
      await until(
        'the Trajectories panel to show the new run',
        async () => (await trajectoriesRun()) === runDir,
        60_000,
      );
      assert.equal(
        await readPanel(page, 'trajectories', (frame) =>
          frame.locator('#follow-run').getAttribute('aria-checked', { timeout: 5000 }),
        ),
        'true',
      );
    }));
});
