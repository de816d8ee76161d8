import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DebugProtocol } from '@vscode/debugprotocol';
import type { RolloutStudioApi } from '../../../extension/extension';
import { RunStoreReader } from '#trainer/contract/runstore';
import { VerlImport } from '#trainer/bridges/verl/import';

/**
 * A verl run, imported: its dumps and metrics in verl's own formats (test/fixtures/verl/run, written
 * by verl's `_dump_generations`; see write_verl_run.py) go through `import verl` into the
 * workspace's runs, and the Runs view, both panels and the replay debugger open it like any run.
 */

const EXTENSION_ID = 'rollout-studio.rollout-studio';
// The suite runs from dist/test/vscode/suite; the fixture is in the repository.
const FIXTURE = path.resolve(__dirname, '../../../../test/fixtures/verl/run');

async function api(): Promise<RolloutStudioApi> {
  const extension = vscode.extensions.getExtension<RolloutStudioApi>(EXTENSION_ID);
  assert.ok(extension, `${EXTENSION_ID} is not installed in this VS Code`);
  return extension.isActive ? extension.exports : extension.activate();
}

async function until<T>(
  what: string,
  probe: () => T | undefined | false,
  timeoutMs = 30_000,
  state?: () => unknown,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${state ? `; state: ${JSON.stringify(state())}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('A verl run imported into the workspace', () => {
  const workspace = vscode.workspace.workspaceFolders![0].uri.fsPath;
  const runDir = path.join(workspace, '.rollout', 'runs', `verl-imported-${process.pid}`);
  const stops: DebugProtocol.StoppedEvent[] = [];
  const started: vscode.DebugSession[] = [];
  let tracker: vscode.Disposable;

  before(async () => {
    const imported = new VerlImport({
      rolloutDataDir: path.join(FIXTURE, 'rollouts'),
      metricsFile: path.join(FIXTURE, 'metrics.jsonl'),
      runDir,
      name: 'verl fixture',
    });
    assert.deepEqual(imported.importNew(), [1, 2]);
    imported.finish();
    await api();
    tracker = vscode.Disposable.from(
      vscode.debug.registerDebugAdapterTrackerFactory('rollout', {
        createDebugAdapterTracker: () => ({
          onDidSendMessage: (message: DebugProtocol.ProtocolMessage) => {
            if (message.type === 'event' && (message as DebugProtocol.Event).event === 'stopped')
              stops.push(message as DebugProtocol.StoppedEvent);
          },
        }),
      }),
      vscode.debug.onDidStartDebugSession((session) => started.push(session)),
    );
  });

  after(async () => {
    tracker?.dispose();
    await vscode.debug.stopDebugging();
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    // Other suites count the workspace's runs and replay the newest: leave none behind.
    fs.rmSync(runDir, { recursive: true, force: true });
  });

  it('is listed in the Runs view and opens in the Trajectories and Metrics panels', async () => {
    const { panels } = await api();
    const listed = panels.refreshRuns();
    const entry = listed.find((e) => e.dir === runDir);
    assert.ok(entry, `the Runs view lists ${runDir}`);
    assert.equal(entry.run?.status, 'finished');
    await vscode.commands.executeCommand('rolloutStudio.openRun', { runDirectory: runDir, step: 1 });
    const trajectories = await until(
      'the Trajectories panel on step 1 of the imported run',
      () => panels.trajectoriesPanels().find((p) => p.runDir === runDir && p.shown === 1),
      30_000,
      () => panels.trajectoriesPanels(),
    );
    assert.equal(trajectories.selection, 1);
    await until(
      'the Metrics panel on the imported run',
      () => panels.metricsPanels().find((p) => p.runDirs.includes(runDir)),
      30_000,
      () => panels.metricsPanels(),
    );
  });

  it("replays in the debugger, stopped at a trajectory's first turn, its transcript showing the failed call", async () => {
    const wanted = new RunStoreReader(runDir).trajectories(1).records[1];
    const seen = stops.length;
    assert.equal(
      await vscode.commands.executeCommand('rolloutStudio.openRunInDebugger', {
        runDirectory: runDir,
        step: 1,
        trajectory: wanted.index,
      }),
      true,
    );
    const event = await until('a stopped event', () => stops.length > seen && stops[seen]);
    assert.equal(event.body.reason, 'entry');
    const session = await until('the replay session', () =>
      started.find((s) => s.name.endsWith(`· step 1 #${wanted.index}`)),
    );
    const threads = (await session.customRequest('threads')) as DebugProtocol.ThreadsResponse['body'];
    assert.match(
      threads.threads.find((t) => t.id === event.body.threadId)!.name,
      new RegExp(`^#${wanted.index} q-001 `),
    );
    const header = new RegExp(`^═══ step 1 · #${wanted.index} · row q-001 `);
    const editor = await until('the transcript in an editor', () =>
      vscode.window.visibleTextEditors.find(
        (e) => e.document.uri.scheme === 'rollout' && header.test(e.document.getText()),
      ),
    );
    assert.match(editor.document.getText(), /Error: search failed: Error: the index is rebuilding/);
  });
});
