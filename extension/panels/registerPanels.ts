import * as vscode from 'vscode';
import type { RunRef, StepSelection } from '../../trainer/contract/protocol';
import { RunStoreReader } from '../../trainer/contract/runstore/reader';
import { MetricsPanel } from './metricsPanel';
import { NewestRun, type ListedRun } from './newestRun';
import type { PanelContext, PanelPlacement } from './panelContext';
import type { NotifiedKeys } from './runHealth';
import { RunStatusBar } from './runStatusBar';
import { RunsTreeProvider } from './runsView';
import type { LiveTrainings } from '../live/liveTrainings';
import { LiveRunSource } from './source/liveRunSource';
import { RunDirectorySource } from './source/runDirectorySource';
import { RunSources } from './source/registry';
import { TrajectoriesPanel } from './trajectoriesPanel';
import { runsRoots, type RunEntry } from './workspaceRuns';

/** Setting: Start Training and Debug Training open the new run's panels. */
const OPEN_ON_TRAINING_START_SETTING = 'panels.openOnTrainingStart';

/** What the panels expose to the extension's API (and through it to the extension tests). */
export interface PanelsApi {
  /**
   * The live-run status-bar item: its text while shown, the run it shows, whether a training in
   * this window drives it, its health marker while shown, and the health notifications shown.
   */
  statusBar(): {
    text: string | undefined;
    runDir: string | undefined;
    live: boolean;
    health: { text: string; tooltip: string; critical: boolean; command: vscode.Command } | undefined;
    notices: Array<{ runDir: string; severity: 'warn' | 'critical'; code: string; step: number; message: string }>;
  };
  /** Open Trajectories panels; `readableDirs`: the folders their page may load files from (the runs' images). */
  trajectoriesPanels(): Array<{
    runDir: string;
    selection: StepSelection;
    shown: number | undefined;
    followsNewest: boolean;
    readableDirs: string[];
  }>;
  metricsPanels(): Array<{ runDirs: string[]; followsNewest: boolean }>;
  /** The run that panels following the newest run show. */
  newestRun(): string | undefined;
  /** The runs the Rollout Runs view lists, after listing them again. */
  refreshRuns(): RunEntry[];
}

/** A run a command opens; `followsNewest`: a panel it opens follows the newest run (else it stays on this one). */
interface RunChoice {
  dir: string;
  step?: number;
  followsNewest?: boolean;
}

/** Health warnings already notified, kept in the workspace's state so a window reload does not tell them again. */
function notifiedKeys(state: vscode.Memento): NotifiedKeys {
  const key = 'rolloutStudio.healthNotified';
  const kept = () => state.get<string[]>(key) ?? [];
  // The newest few hundred are plenty: a key is a run directory and a warning code.
  return { has: (k) => kept().includes(k), add: (k) => void state.update(key, [...kept(), k].slice(-300)) };
}

/** A run named by a command's argument: a path, a URI, a Runs view item, or `{ runDirectory, step, followsNewest }`. */
function runArgument(arg: unknown): RunChoice | undefined {
  if (typeof arg === 'string') return { dir: arg };
  if (arg instanceof vscode.Uri) return { dir: arg.fsPath };
  if (typeof arg === 'object' && arg !== null) {
    const o = arg as { dir?: unknown; runDirectory?: unknown; step?: unknown; followsNewest?: unknown };
    const dir = typeof o.runDirectory === 'string' ? o.runDirectory : typeof o.dir === 'string' ? o.dir : undefined;
    if (dir)
      return {
        dir,
        ...(typeof o.step === 'number' ? { step: o.step } : {}),
        ...(o.followsNewest === true ? { followsNewest: true } : {}),
      };
  }
  return undefined;
}

/** The run a LiveTraining writes, named; undefined while its run.json cannot be read. */
function startedRun(dir: string): (RunRef & { createdAt: string }) | undefined {
  try {
    const run = new RunStoreReader(dir).run();
    return { dir, id: run.id, name: run.name, createdAt: run.createdAt };
  } catch {
    return undefined;
  }
}

/** What the runs folder lists, as NewestRun reads it. */
function listed(entries: readonly RunEntry[]): ListedRun[] {
  return entries.flatMap((e) =>
    e.run ? [{ dir: e.dir, id: e.run.id, name: e.run.name, createdAt: e.run.createdAt, status: e.run.status }] : [],
  );
}

/**
 * Open (or reveal) a run's Trajectories panel, then its Metrics panel in the column after it.
 * Metrics opens once the Trajectories page has started (at most 4 s): in a browser-hosted VS
 * Code two webview frames created together fight over the webview service worker and one of
 * them loses its page for a reload or two (extension/panels/loadWebview.ts).
 */
async function openRunPanels(context: PanelContext, run: RunChoice, placement: PanelPlacement): Promise<void> {
  const trajectories = TrajectoriesPanel.show(context, run.dir, {
    ...placement,
    followsNewest: run.followsNewest ?? false,
    ...(run.step !== undefined ? { step: run.step } : {}),
  });
  await Promise.race([trajectories.started, new Promise((resolve) => setTimeout(resolve, 4000))]);
  const column =
    trajectories.panel.viewColumn !== undefined
      ? Math.min(vscode.ViewColumn.Nine, trajectories.panel.viewColumn + 1)
      : vscode.ViewColumn.Beside;
  // The Trajectories panel's run, not `run`: one that follows the newest run may have moved on while its page started.
  MetricsPanel.show(context, trajectories.runDir, { ...placement, column, followsNewest: run.followsNewest ?? false });
}

/** Open Run…: one of the workspace's runs, or any run directory on disk. */
async function pickRun(entries: readonly RunEntry[]): Promise<string | undefined> {
  const browse = { label: '$(folder-opened) Browse for a run directory…', dir: undefined as string | undefined };
  const items = [
    ...entries.flatMap((e) =>
      e.run
        ? [
            {
              label: e.run.name,
              description: `${e.run.id} · ${e.run.status}`,
              detail: e.dir,
              dir: e.dir as string | undefined,
            },
          ]
        : [],
    ),
    browse,
  ];
  const chosen = await vscode.window.showQuickPick(items, {
    title: 'Open a Rollout Studio run',
    placeHolder: 'A run of this workspace, or a run directory elsewhere',
  });
  if (!chosen) return undefined;
  if (chosen.dir) return chosen.dir;
  const folders = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    openLabel: 'Open Run',
    title: 'A run directory (it holds run.json)',
  });
  return folders?.[0]?.fsPath;
}

/**
 * Everything of the Trajectories and Metrics panels: their commands, the Rollout Runs view,
 * the live-run status-bar item and the serializers that bring panels back after a reload.
 * A run that a training in this window is writing is followed through the trainer's events
 * (`trainings`); any other run through its files.
 */
export function registerPanels(
  context: vscode.ExtensionContext,
  log: vscode.OutputChannel,
  trainings?: LiveTrainings,
): PanelsApi {
  const sources = new RunSources((dir) => {
    const live = trainings?.get(dir);
    return live?.active ? new LiveRunSource(dir, live) : new RunDirectorySource(dir);
  });
  const runs = new RunsTreeProvider();
  const newestRun = new NewestRun(listed(runs.refresh()));
  const panels: PanelContext = { extensionUri: context.extensionUri, sources, log, newestRun };
  const tree = vscode.window.createTreeView('rolloutStudio.runs', { treeDataProvider: runs });
  const statusBar = new RunStatusBar(sources, notifiedKeys(context.workspaceState));

  const trainingDirs = () => (trainings?.all() ?? []).map((t) => t.runDirectory);
  const refresh = (): RunEntry[] => {
    const entries = runs.refresh();
    statusBar.track(entries, trainingDirs());
    MetricsPanel.runsChanged();
    newestRun.listed(listed(entries));
    return entries;
  };
  // Open panels that follow the newest run move to a run that starts; pinned ones say it started.
  const stopTellingPanels = newestRun.onChange((run) => {
    for (const panel of TrajectoriesPanel.all()) panel.newestRunChanged(run);
    for (const panel of MetricsPanel.all()) panel.newestRunChanged(run);
  });
  /** A training in this window created its run: it is the newest; its panels open beside the editor unless the setting says not to. */
  const trainingStarted = async (dir: string) => {
    const run = startedRun(dir);
    if (!run) return;
    newestRun.started(run);
    if (!vscode.workspace.getConfiguration('rolloutStudio').get<boolean>(OPEN_ON_TRAINING_START_SETTING, true)) return;
    try {
      await openRunPanels(
        panels,
        { dir, followsNewest: true },
        { column: vscode.ViewColumn.Beside, preserveFocus: true },
      );
    } catch (error) {
      log.appendLine(`Rollout Studio could not open the panels of ${dir}: ${(error as Error).message}`);
    }
  };
  let queued: NodeJS.Timeout | undefined;
  const refreshSoon = () => {
    clearTimeout(queued);
    queued = setTimeout(refresh, 150);
  };

  let watchers: vscode.FileSystemWatcher[] = [];
  const watchRuns = () => {
    watchers.forEach((w) => w.dispose());
    watchers = runsRoots().flatMap((root) =>
      ['*', '*/run.json'].map((glob) => {
        const watcher = vscode.workspace.createFileSystemWatcher(
          new vscode.RelativePattern(vscode.Uri.file(root), glob),
        );
        watcher.onDidCreate(refreshSoon);
        watcher.onDidChange(refreshSoon);
        watcher.onDidDelete(refreshSoon);
        return watcher;
      }),
    );
  };
  watchRuns();

  /** The run a command acts on: its argument, else the run selected in the view, else the newest run (followed). */
  const chooseRun = (arg: unknown): RunChoice | undefined => {
    const named = runArgument(arg);
    if (named) return named;
    const selected = tree.selection.find((e) => e.run);
    if (selected) return { dir: selected.dir };
    // A training of this window first (its config may write outside the runs folder), as the status bar does.
    const newest = trainingDirs().at(-1) ?? refresh().find((e) => e.run)?.dir;
    if (newest) return { dir: newest, followsNewest: true };
    const where = runsRoots().join(', ') || 'a workspace folder (none is open)';
    void vscode.window.showInformationMessage(
      `Rollout Studio: no runs yet. Runs appear in ${where} when training starts.`,
    );
    return undefined;
  };
  const open = (arg: unknown, what: (run: RunChoice) => void): string | undefined => {
    const run = chooseRun(arg);
    if (!run) return undefined;
    try {
      what(run);
      return run.dir;
    } catch (error) {
      const message = `Rollout Studio cannot open ${run.dir}: ${(error as Error).message}`;
      log.appendLine(message);
      void vscode.window.showErrorMessage(message);
      return undefined;
    }
  };

  context.subscriptions.push(
    tree,
    statusBar,
    { dispose: () => watchers.forEach((w) => w.dispose()) },
    { dispose: () => sources.dispose() },
    { dispose: stopTellingPanels },
    vscode.commands.registerCommand('rolloutStudio.openTrajectories', (arg?: unknown) =>
      open(arg, (run) =>
        TrajectoriesPanel.show(panels, run.dir, {
          followsNewest: run.followsNewest ?? false,
          ...(run.step !== undefined ? { step: run.step } : {}),
        }),
      ),
    ),
    vscode.commands.registerCommand('rolloutStudio.openMetrics', (arg?: unknown) =>
      open(arg, (run) => MetricsPanel.show(panels, run.dir, { followsNewest: run.followsNewest ?? false })),
    ),
    vscode.commands.registerCommand('rolloutStudio.openRun', async (arg?: unknown) => {
      const chosen = arg === undefined ? await pickRun(runs.refresh()) : arg;
      const run = chosen === undefined ? undefined : chooseRun(chosen);
      if (!run) return undefined;
      try {
        await openRunPanels(panels, run, { column: vscode.ViewColumn.Active });
        return run.dir;
      } catch (error) {
        const message = `Rollout Studio cannot open ${run.dir}: ${(error as Error).message}`;
        log.appendLine(message);
        void vscode.window.showErrorMessage(message);
        return undefined;
      }
    }),
    vscode.commands.registerCommand('rolloutStudio.refreshRuns', () => refresh().length),
    vscode.window.registerWebviewPanelSerializer(TrajectoriesPanel.viewType, {
      deserializeWebviewPanel: async (panel, state) => TrajectoriesPanel.restore(panels, panel, state),
    }),
    vscode.window.registerWebviewPanelSerializer(MetricsPanel.viewType, {
      deserializeWebviewPanel: async (panel, state) => MetricsPanel.restore(panels, panel, state),
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('rolloutStudio.runs.directory')) {
        watchRuns();
        refresh();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      watchRuns();
      refresh();
    }),
  );
  statusBar.track(runs.runs, trainingDirs());
  // A training started here shows in the status bar and the Runs view at once, not at the next file event.
  const stopFollowing = trainings?.onChange((change) => {
    refresh();
    if (change.type === 'started') void trainingStarted(change.training.runDirectory);
  });
  if (stopFollowing) context.subscriptions.push({ dispose: stopFollowing });

  return {
    statusBar: () => ({
      text: statusBar.text,
      runDir: statusBar.runDir,
      live: statusBar.live,
      health: statusBar.healthMarker,
      notices: [...statusBar.notices],
    }),
    trajectoriesPanels: () =>
      TrajectoriesPanel.all().map((p) => ({
        runDir: p.runDir,
        selection: p.step.selection,
        shown: p.step.shown,
        followsNewest: p.followsNewest,
        readableDirs: (p.panel.webview.options.localResourceRoots ?? []).map((root) => root.fsPath),
      })),
    metricsPanels: () =>
      MetricsPanel.all().map((p) => ({
        runDirs: [...p.runDirs],
        followsNewest: p.followsNewest,
        readableDirs: (p.panel.webview.options.localResourceRoots ?? []).map((root) => root.fsPath),
      })),
    newestRun: () => newestRun.run?.dir,
    refreshRuns: refresh,
  };
}
