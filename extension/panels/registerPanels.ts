import * as vscode from 'vscode';
import type { RunRef, StepSelection } from '../../trainer/contract/protocol';
import { RunStoreReader } from '../../trainer/contract/runstore/reader';
import { MetricsPanel } from './metricsPanel';
import { NewestRun, type ListedRun } from './newestRun';
import type { PanelContext } from './panelContext';
import type { NotifiedKeys } from './runHealth';
import { RunStatusBar } from './runStatusBar';
import { openRunPanels, registerRunCommands } from './runPanelCommands';
import { RunsTreeProvider } from './runsView';
import type { LiveTrainings } from '../live/liveTrainings';
import { LiveRunSource } from './source/liveRunSource';
import { RunDirectorySource } from './source/runDirectorySource';
import { RunSources } from './source/registry';
import { TrajectoriesPanel } from './trajectoriesPanel';
import { runsRoots, type RunEntry } from './workspaceRuns';
import { isRolloutWorkspace, StartOnce } from '../rolloutWorkspace';

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

/** Health warnings already notified, kept in the workspace's state so a window reload does not tell them again. */
function notifiedKeys(state: vscode.Memento): NotifiedKeys {
  const key = 'rolloutStudio.healthNotified';
  const kept = () => state.get<string[]>(key) ?? [];
  // The newest few hundred are plenty: a key is a run directory and a warning code.
  return { has: (k) => kept().includes(k), add: (k) => void state.update(key, [...kept(), k].slice(-300)) };
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

/** A training in this window created its run: it is the newest; its panels open beside the editor unless the setting says not to. */
async function trainingStarted(
  panels: PanelContext,
  newestRun: NewestRun,
  log: vscode.OutputChannel,
  dir: string,
): Promise<void> {
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
}

/**
 * Watches the runs folders (a run created or deleted, a run.json written) and refreshes a moment
 * after the last event; `watch` starts over when the folders may have changed.
 */
function runsFolderWatcher(refresh: () => void): { watch(): void; dispose(): void } {
  let queued: NodeJS.Timeout | undefined;
  const refreshSoon = () => {
    clearTimeout(queued);
    queued = setTimeout(refresh, 150);
  };
  let watchers: vscode.FileSystemWatcher[] = [];
  const dispose = () => watchers.forEach((w) => w.dispose());
  const watch = () => {
    dispose();
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
  return { watch, dispose };
}

/** The runs folders change with the setting and the workspace's folders: watch the new ones and list again. */
function followRunsFolders(watcher: { watch(): void }, refresh: () => void): vscode.Disposable[] {
  return [
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('rolloutStudio.runs.directory')) {
        watcher.watch();
        refresh();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      watcher.watch();
      refresh();
    }),
  ];
}

/** The serializers that bring the panels back after a window reload. */
function panelSerializers(panels: PanelContext): vscode.Disposable[] {
  return [TrajectoriesPanel.serializer(panels), MetricsPanel.serializer(panels)];
}

/**
 * Opens `runsPart` when the workspace is, or becomes, a Rollout Studio workspace (rolloutWorkspace.ts):
 * checked now, and again as TypeScript files open, a `.rollout/` folder appears, the folders or
 * the runs folder setting change. Nothing is watched once it is open.
 */
function whenRolloutWorkspace(runsPart: StartOnce): vscode.Disposable {
  const typescript = (d: vscode.TextDocument) => d.languageId === 'typescript' || d.languageId === 'typescriptreact';
  const folders = () =>
    (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  const check = (documents: readonly vscode.TextDocument[]) => {
    const openSources = documents.filter(typescript).map((d) => d.getText());
    if (!runsPart.started && isRolloutWorkspace({ runsRoots: runsRoots(), folders: folders(), openSources }))
      runsPart.open();
    if (runsPart.started) dispose();
  };
  const rolloutFolder = vscode.workspace.createFileSystemWatcher('**/.rollout/**', false, true, true);
  const subscriptions: vscode.Disposable[] = [
    rolloutFolder,
    rolloutFolder.onDidCreate(() => check([])),
    vscode.workspace.onDidOpenTextDocument((document) => check([document])),
    vscode.workspace.onDidChangeWorkspaceFolders(() => check([])),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('rolloutStudio.runs.directory')) check([]);
    }),
  ];
  const dispose = () => subscriptions.forEach((s) => s.dispose());
  check(vscode.workspace.textDocuments);
  return { dispose };
}

/** What the extension's API shows of the panels; asking is using Rollout Studio, so it starts the runs part. */
function panelsApi(
  statusBar: RunStatusBar,
  newestRun: NewestRun,
  refresh: () => RunEntry[],
  runsPart: StartOnce,
): PanelsApi {
  const api: PanelsApi = {
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
  const started = <F extends (...args: never[]) => unknown>(f: F) =>
    ((...args: never[]) => {
      runsPart.open();
      return f(...args);
    }) as F;
  return {
    statusBar: started(api.statusBar),
    trajectoriesPanels: started(api.trajectoriesPanels),
    metricsPanels: started(api.metricsPanels),
    newestRun: started(api.newestRun),
    refreshRuns: started(api.refreshRuns),
  };
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
  const newestRun = new NewestRun();
  const panels: PanelContext = { extensionUri: context.extensionUri, sources, log, newestRun };
  const tree = vscode.window.createTreeView('rolloutStudio.runs', { treeDataProvider: runs });
  const statusBar = new RunStatusBar(sources, notifiedKeys(context.workspaceState));
  const trainingDirs = () => (trainings?.all() ?? []).map((t) => t.runDirectory);
  const watcher = runsFolderWatcher(() => refresh());
  // The workspace's runs (listed, watched, the live one in the status bar) wait for a Rollout Studio workspace.
  const runsPart = new StartOnce(() => {
    const entries = runs.refresh();
    newestRun.seed(listed(entries));
    statusBar.track(entries, trainingDirs());
    watcher.watch();
    context.subscriptions.push(...followRunsFolders(watcher, refresh));
  });
  const refresh = (): RunEntry[] => {
    runsPart.open();
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

  context.subscriptions.push(
    tree,
    statusBar,
    watcher,
    { dispose: () => sources.dispose() },
    { dispose: stopTellingPanels },
    ...registerRunCommands({ panels, runs, tree, log, trainingDirs, refresh }),
    ...panelSerializers(panels),
    whenRolloutWorkspace(runsPart),
  );
  // A training started here shows in the status bar and the Runs view at once, not at the next file event.
  const stopFollowing = trainings?.onChange((change) => {
    refresh();
    if (change.type === 'started') void trainingStarted(panels, newestRun, log, change.training.runDirectory);
  });
  if (stopFollowing) context.subscriptions.push({ dispose: stopFollowing });
  return panelsApi(statusBar, newestRun, refresh, runsPart);
}
