import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot, testOutputDir } from '../harness/paths';
import { addFunctionBreakpoint, openWorkbench, runCommand, screenshot, type Workbench } from '../harness/workbench';
import { writeRecordedRun } from '../fixtures/recordedRun';
import { RunStoreReader } from '#trainer/contract/runstore';

/** A copy of the fixture workspace with a recorded run in .rollout/runs and a launch.json that replays it. */
function workspaceWithRecordedRun(): string {
  const dir = path.join(testOutputDir, 'fixtures', 'debugger-replay');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), dir, { recursive: true });
  writeRecordedRun(path.join(dir, '.rollout', 'runs', 'demo-run'), { steps: 2, batch: 4, groupSize: 2, seed: 7 });
  fs.mkdirSync(path.join(dir, '.vscode'));
  const launch = {
    version: '0.2.0',
    configurations: [
      {
        type: 'rollout',
        request: 'launch',
        name: 'Replay the demo run',
        runDirectory: '${workspaceFolder}/.rollout/runs/demo-run',
      },
    ],
  };
  fs.writeFileSync(path.join(dir, '.vscode', 'launch.json'), JSON.stringify(launch, null, 2));
  return dir;
}

describe('Debugger: replay a recorded run from launch.json, in a real VS Code', () => {
  let workbench: Workbench;
  let fixture: string;
  before(async () => {
    fixture = workspaceWithRecordedRun();
    workbench = await openWorkbench('e2e-debugger-replay', path.relative(repoRoot, fixture));
  });
  after(() => workbench?.close());

  it('stops on the tool breakpoint with turns in CALL STACK and the arguments in VARIABLES', async () => {
    try {
      await replayToTheBreakpoint();
    } catch (error) {
      console.log(`screenshot of the failure: ${await screenshot(workbench.page, 'debugger-replay-failure.png')}`);
      console.log(
        `debug console:\n${(await workbench.page.locator('.repl .monaco-list-row').allTextContents()).join('\n')}`,
      );
      throw error;
    }
  });

  async function replayToTheBreakpoint(): Promise<void> {
    const { page } = workbench;
    // The first search call of step 1, as the batch meets them: turn by turn, trajectory by trajectory.
    const trajectories = new RunStoreReader(path.join(fixture, '.rollout', 'runs', 'demo-run')).trajectories(1).records;
    const firstSearch = Array.from({ length: Math.max(...trajectories.map((t) => t.turns.length)) }, (_, turn) =>
      trajectories.flatMap((t) =>
        (t.turns[turn]?.toolCalls ?? []).filter((c) => c.name === 'search').map((call) => ({ t, turn, call })),
      ),
    ).flat()[0];
    const query = (firstSearch.call.arguments as { query: string }).query;

    // The Run view lists the launch configuration once the extension host has registered the
    // rollout debugger; until then VS Code says no debug extension is available.
    await runCommand(page, 'View: Show Run and Debug');
    await page.locator('.start-debug-action-item', { hasText: 'Replay the demo run' }).waitFor({ timeout: 90_000 });

    await addFunctionBreakpoint(page, 'search');
    // Room for the call stack: the WATCH and BREAKPOINTS views are not needed from here on.
    await page.locator('.pane-header', { hasText: 'Watch' }).click();
    await page.locator('.pane-header', { hasText: 'Breakpoints' }).click();

    // The Run view's start button runs the selected launch configuration. (The palette's
    // "Debug: Start Debugging" also matches js-debug's "…and Stop on Entry".)
    await page.locator('.start-debug-action-item .codicon-debug-start').click();

    // CALL STACK: the stopped trajectory's frames, innermost the pending call, then its turns.
    const callStack = page.locator('.debug-call-stack');
    const pendingCall = callStack.locator('.monaco-list-row', { hasText: 'before it runs' });
    await pendingCall.waitFor({ timeout: 90_000 });
    assert.match(
      (await pendingCall.textContent()) ?? '',
      new RegExp(`search\\(\\{"query":"${query}"\\}\\) · before it runs`),
    );
    // The list renders only the rows in view: scroll it while a frame is below the fold.
    for (const turn of [`assistant (turn ${firstSearch.turn}) · tool_call`, 'user (turn 1)', 'system (turn 0)']) {
      const row = callStack.locator('.monaco-list-row', { hasText: turn }).first();
      for (let tries = 0; ; tries++) {
        try {
          await row.waitFor({ timeout: 3000 });
          break;
        } catch (error) {
          if (tries === 5) throw error;
          await callStack.hover();
          await page.mouse.wheel(0, 66);
        }
      }
    }

    // The editor shows the transcript at the call.
    await page
      .locator('.tab', { hasText: `trajectory-${firstSearch.t.index}.rollout.txt` })
      .waitFor({ timeout: 30_000 });
    await page.locator('.monaco-editor .view-line', { hasText: '<tool_call>' }).first().waitFor({ timeout: 15_000 });

    // VARIABLES: the Tool call scope is open; expanding its arguments shows the query.
    const variables = page.locator('.debug-variables');
    const argumentsRow = variables.locator('.monaco-list-row', { hasText: 'arguments' }).first();
    await argumentsRow.waitFor({ timeout: 30_000 });
    await argumentsRow.click();
    const queryRow = variables.locator('.monaco-list-row', { hasText: 'query' }).first();
    await queryRow.waitFor({ timeout: 15_000 });
    assert.match((await queryRow.textContent()) ?? '', new RegExp(`query:\\s*"${query}"`));

    await page.waitForTimeout(500);
    const file = await screenshot(page, 'debugger-replay.png');
    console.log(`screenshot: ${file}`);
  }
});
