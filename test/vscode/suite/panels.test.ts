import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RolloutStudioApi } from '../../../extension/extension';
import { writeRecordedRun, recordedRunWriter } from '../../fixtures/recordedRun';
import { HEALTH_RUN_COLLAPSE, writeRecordedHealthRun } from '../../fixtures/recordedHealthRun';

const EXTENSION_ID = 'rollout-studio.rollout-studio';

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

function webviewTabs(viewType: string): vscode.Tab[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t) => t.input instanceof vscode.TabInputWebview && t.input.viewType.endsWith(viewType));
}

describe('Panels on recorded runs', () => {
  const workspace = vscode.workspace.workspaceFolders![0].uri.fsPath;
  const runs = path.join(workspace, '.rollout', 'runs');
  let finished: string;
  let live: string;

  before(async () => {
    fs.rmSync(runs, { recursive: true, force: true });
    finished = writeRecordedRun(path.join(runs, 'run-finished'), { steps: 3, batch: 8, groupSize: 4, seed: 1 });
    // Created a moment later, so it is the newest run.
    await new Promise((r) => setTimeout(r, 20));
    live = writeRecordedRun(path.join(runs, 'run-live'), {
      steps: 2,
      batch: 8,
      groupSize: 4,
      seed: 2,
      status: 'running',
    });
    const record = JSON.parse(fs.readFileSync(path.join(live, 'run.json'), 'utf8'));
    record.createdAt = new Date(Date.parse(record.createdAt) + 60_000).toISOString();
    fs.writeFileSync(path.join(live, 'run.json'), JSON.stringify(record));
    await api();
  });

  afterEach(() => vscode.commands.executeCommand('workbench.action.closeAllEditors'));

  it('contributes its commands and lists the workspace’s runs, newest first', async () => {
    const commands = await vscode.commands.getCommands(true);
    for (const id of [
      'rolloutStudio.openTrajectories',
      'rolloutStudio.openMetrics',
      'rolloutStudio.openRun',
      'rolloutStudio.refreshRuns',
    ])
      assert.ok(commands.includes(id), id);
    const listed = (await api()).panels.refreshRuns();
    assert.deepEqual(
      listed.map((e) => [path.basename(e.dir), e.run?.status]),
      [
        ['run-live', 'running'],
        ['run-finished', 'finished'],
      ],
    );
  });

  it('Open Trajectories opens the newest run and the webview asks for its newest step', async () => {
    const opened = await vscode.commands.executeCommand<string>('rolloutStudio.openTrajectories');
    assert.equal(opened, live);
    const { panels } = await api();
    const panel = await until('the Trajectories webview to load and show a step', () =>
      panels.trajectoriesPanels().find((p) => p.runDir === live && p.shown !== undefined),
    );
    assert.equal(panel.selection, 'follow');
    assert.equal(panel.shown, 2);
    assert.equal(webviewTabs('rolloutStudio.trajectories').length, 1);
    assert.equal(webviewTabs('rolloutStudio.trajectories')[0].label, 'Trajectories · run-live');
  });

  it('opens a run at a pinned step, and Open Metrics on a chosen run', async () => {
    await vscode.commands.executeCommand('rolloutStudio.openRun', { runDirectory: finished, step: 1 });
    const { panels } = await api();
    const trajectories = await until(
      `the pinned Trajectories panel`,
      () => panels.trajectoriesPanels().find((p) => p.runDir === finished && p.shown === 1),
      30_000,
      () => panels.trajectoriesPanels(),
    );
    assert.equal(trajectories.selection, 1);
    assert.deepEqual(
      panels.metricsPanels().map((p) => p.runDirs),
      [[finished]],
    );
    // The tab model follows panel creation asynchronously (Metrics opens once Trajectories has started).
    await until(
      'one Metrics tab',
      () => webviewTabs('rolloutStudio.metrics').length === 1,
      10_000,
      () => webviewTabs('rolloutStudio.metrics').map((t) => t.label),
    );
  });

  it('a panel that follows the newest run moves to a run that starts; a pinned one stays and says so', async () => {
    const { panels } = await api();
    // Open Trajectories with nothing chosen: the newest run, followed. Open Run on a run: pinned to it.
    assert.equal(await vscode.commands.executeCommand<string>('rolloutStudio.openTrajectories'), live);
    assert.equal(await vscode.commands.executeCommand<string>('rolloutStudio.openRun', finished), finished);
    await until(
      'both panels',
      () => panels.trajectoriesPanels().length === 2 && panels.metricsPanels().length === 1,
      30_000,
      () => [panels.trajectoriesPanels(), panels.metricsPanels()],
    );
    assert.deepEqual(
      panels
        .trajectoriesPanels()
        .map((p) => [path.basename(p.runDir), p.followsNewest])
        .sort(),
      [
        ['run-finished', false],
        ['run-live', true],
      ],
    );

    // A training started elsewhere (a terminal): a running run, created later, appears in the runs folder.
    const started = writeRecordedRun(path.join(runs, 'run-started'), {
      steps: 1,
      batch: 4,
      groupSize: 2,
      seed: 3,
      status: 'running',
    });
    const record = JSON.parse(fs.readFileSync(path.join(started, 'run.json'), 'utf8'));
    record.createdAt = new Date(Date.parse(record.createdAt) + 120_000).toISOString();
    fs.writeFileSync(path.join(started, 'run.json'), JSON.stringify(record));
    panels.refreshRuns();
    try {
      await until(
        'the following panel to show the new run',
        () => panels.trajectoriesPanels().find((p) => p.runDir === started && p.followsNewest),
        10_000,
        () => panels.trajectoriesPanels(),
      );
      assert.equal(panels.newestRun(), started);
      assert.ok(
        panels
          .trajectoriesPanels()
          .find((p) => p.runDir === started)!
          .readableDirs.includes(started),
        'the page may load the new run’s images',
      );
      assert.ok(
        panels.trajectoriesPanels().some((p) => p.runDir === finished && !p.followsNewest),
        'the pinned panel stayed',
      );
      assert.ok(
        panels.metricsPanels().some((p) => p.runDirs[0] === finished && !p.followsNewest),
        'the pinned Metrics panel stayed',
      );
      await until(
        'the tab to be titled after the new run',
        () => webviewTabs('rolloutStudio.trajectories').some((t) => t.label === 'Trajectories · run-started'),
        10_000,
        () => webviewTabs('rolloutStudio.trajectories').map((t) => t.label),
      );
    } finally {
      fs.rmSync(started, { recursive: true, force: true });
      panels.refreshRuns();
    }
  });

  it('shows the live run in the status bar and updates it as records are appended', async () => {
    const { panels } = await api();
    const shown = await until('the status-bar item of the running run', () => panels.statusBar().text);
    assert.equal(panels.statusBar().runDir, live);
    assert.match(shown, /^\$\(pulse\) step 2\/2 · reward \d\.\d{3} · exact_match \d\.\d{3} · \d+ tok\/s$/);
    const writer = recordedRunWriter(live);
    writer.update({ totalSteps: 5 });
    writer.appendMetrics({
      step: 3,
      time: new Date().toISOString(),
      kind: 'train',
      values: { 'reward/mean': 0.777, 'throughput/rollout_tokens_per_s': 512.4 },
    });
    await until(
      'the status bar to show step 3',
      () => panels.statusBar().text === '$(pulse) step 3/5 · reward 0.777 · 512 tok/s',
    );
    writer.finish('finished');
    await until('the status bar to hide when the run ends', () => panels.statusBar().text === undefined);
  });

  it('marks the live run’s health warnings in the status bar, notifies the first critical one once, and opens Metrics on a click', async () => {
    const { panels } = await api();
    const health = writeRecordedHealthRun(path.join(runs, 'run-health'));
    const record = JSON.parse(fs.readFileSync(path.join(health, 'run.json'), 'utf8'));
    record.createdAt = new Date(Date.parse(record.createdAt) + 180_000).toISOString();
    fs.writeFileSync(path.join(health, 'run.json'), JSON.stringify(record));
    const writer = recordedRunWriter(health);
    try {
      panels.refreshRuns();
      // Step 12: tool-call errors in training, and the held-out score fell in the evaluation after it.
      const marker = await until(
        'the health marker of the run',
        () => panels.statusBar().runDir === health && panels.statusBar().health,
        30_000,
        () => panels.statusBar(),
      );
      assert.equal(marker.text, '$(warning) tool-call errors +1');
      assert.equal(marker.critical, false);
      assert.match(marker.tooltip, /at step 12\n\nWarning: 84 % of tool calls .*\nTry: turn on constrained tool calls/);
      // Its collapse at step 11 was critical: told once, when the editor first followed the run.
      const notices = await until(
        'a notification',
        () =>
          panels.statusBar().notices.filter((n) => n.runDir === health).length > 0 &&
          panels.statusBar().notices.filter((n) => n.runDir === health),
      );
      assert.deepEqual(
        notices.map((n) => [n.severity, n.code, n.step]),
        [['critical', 'collapse', 11]],
      );
      assert.match(
        notices[0].message,
        new RegExp(
          `step 11: ${HEALTH_RUN_COLLAPSE.message}\\. Try: .* Done: .*3 other warnings in the Metrics panel\\.$`,
        ),
      );

      writer.appendMetrics({
        step: 13,
        time: new Date().toISOString(),
        kind: 'train',
        values: { 'reward/mean': 0.1 },
        warnings: [
          {
            code: 'entropy_collapse',
            severity: 'critical',
            message: 'entropy fell to 0.01',
            advice: 'raise rollout.temperature',
          },
        ],
      });
      await until(
        'the marker to turn critical',
        () => panels.statusBar().health?.critical && panels.statusBar().health?.text === '$(error) entropy collapse',
        30_000,
        () => panels.statusBar(),
      );
      writer.appendMetrics({
        step: 14,
        time: new Date().toISOString(),
        kind: 'train',
        values: { 'reward/mean': 0.1 },
        warnings: [
          {
            code: 'kl_spike',
            severity: 'warn',
            message: 'KL to the reference jumped to 0.9',
            advice: 'raise algorithm.kl.coef',
          },
        ],
      });
      await until(
        'the new warning code to be told',
        () => panels.statusBar().notices.some((n) => n.runDir === health && n.code === 'kl_spike'),
        30_000,
        () => panels.statusBar(),
      );
      assert.equal(
        panels.statusBar().notices.filter((n) => n.runDir === health && n.severity === 'critical').length,
        1,
        'the second critical warning is not told again',
      );
      writer.appendMetrics({ step: 15, time: new Date().toISOString(), kind: 'train', values: { 'reward/mean': 0.1 } });
      await until(
        'the marker to go when the newest step has no warning',
        () => panels.statusBar().health === undefined,
        30_000,
        () => panels.statusBar(),
      );
      writer.appendMetrics({
        step: 16,
        time: new Date().toISOString(),
        kind: 'train',
        values: { 'reward/mean': 0.1 },
        warnings: [
          {
            code: 'kl_spike',
            severity: 'warn',
            message: 'KL to the reference jumped to 0.8',
            advice: 'raise algorithm.kl.coef',
          },
        ],
      });
      const command = (await until('the marker again', () => panels.statusBar().health)).command;
      await vscode.commands.executeCommand(command.command, ...(command.arguments ?? []));
      await until(
        'the Metrics panel of the run',
        () => panels.metricsPanels().some((p) => p.runDirs[0] === health),
        30_000,
        () => panels.metricsPanels(),
      );
      assert.equal(panels.statusBar().notices.filter((n) => n.runDir === health).length, 2, 'kl_spike was told once');
    } finally {
      writer.finish('finished');
      await until(
        'the status bar to let the run go',
        () => panels.statusBar().text === undefined && panels.statusBar().health === undefined,
      );
    }
  });

  it('says there is no run to open when the runs folder is empty, and names a run it cannot read', async () => {
    const config = vscode.workspace.getConfiguration('rolloutStudio');
    await config.update('runs.directory', 'no-runs-here', vscode.ConfigurationTarget.Workspace);
    try {
      assert.equal(await vscode.commands.executeCommand('rolloutStudio.openTrajectories'), undefined);
      assert.equal(await vscode.commands.executeCommand('rolloutStudio.openMetrics'), undefined);
    } finally {
      await config.update('runs.directory', undefined, vscode.ConfigurationTarget.Workspace);
    }
    assert.equal(
      await vscode.commands.executeCommand('rolloutStudio.openTrajectories', path.join(workspace, 'not-a-run')),
      undefined,
    );
    assert.equal(webviewTabs('rolloutStudio.trajectories').length, 0);
  });
});
