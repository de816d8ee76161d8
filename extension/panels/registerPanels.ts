import * as vscode from 'vscode';
import type { StepSelection } from '../../trainer/shared/protocol';
import { MetricsPanel } from './metricsPanel';
import type { PanelContext } from './panelContext';
import { RunStatusBar } from './runStatusBar';
import { RunsTreeProvider } from './runsView';
import type { LiveTrainings } from '../live/liveTrainings';
import { LiveRunSource } from './source/liveRunSource';
import { RunDirectorySource } from './source/runDirectorySource';
import { RunSources } from './source/registry';
import { TrajectoriesPanel } from './trajectoriesPanel';
import { runsRoots, type RunEntry } from './workspaceRuns';

/** What the panels expose to the extension's API (and through it to the extension tests). */
export interface PanelsApi {
  /** The live-run status-bar item: its text while shown, the run it shows, and whether a training in this window drives it. */
  statusBar(): { text: string | undefined; runDir: string | undefined; live: boolean };
  trajectoriesPanels(): Array<{ runDir: string; selection: StepSelection; shown: number | undefined }>;
  metricsPanels(): Array<{ runDirs: string[] }>;
  /** The runs the Rollout Runs view lists, after listing them again. */
  refreshRuns(): RunEntry[];
}

/** A run named by a command's argument: a path, a URI, a Runs view item, or `{ runDirectory, step }`. */
function runArgument(arg: unknown): { dir: string; step?: number } | undefined {
  if (typeof arg === 'string') return { dir: arg };
  if (arg instanceof vscode.Uri) return { dir: arg.fsPath };
  if (typeof arg === 'object' && arg !== null) {
    const o = arg as { dir?: unknown; runDirectory?: unknown; step?: unknown };
    const dir = typeof o.runDirectory === 'string' ? o.runDirectory : typeof o.dir === 'string' ? o.dir : undefined;
    if (dir) return { dir, ...(typeof o.step === 'number' ? { step: o.step } : {}) };
  }
  return undefined;
}

/** Open Run…: one of the workspace's runs, or any run directory on disk. */
async function pickRun(entries: readonly RunEntry[]): Promise<string | undefined> {
  const browse = { label: '$(folder-opened) Browse for a run directory…', dir: undefined as string | undefined };
  const items = [
    ...entries.flatMap((e) => (e.run ? [{ label: e.run.name, description: `${e.run.id} · ${e.run.status}`, detail: e.dir, dir: e.dir as string | undefined }] : [])),
    browse,
  ];
  const chosen = await vscode.window.showQuickPick(items, { title: 'Open a Rollout Studio run', placeHolder: 'A run of this workspace, or a run directory elsewhere' });
  if (!chosen) return undefined;
  if (chosen.dir) return chosen.dir;
  const folders = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Open Run', title: 'A run directory (it holds run.json)' });
  return folders?.[0]?.fsPath;
}

/**
 * Everything of the Trajectories and Metrics panels: their commands, the Rollout Runs view,
 * the live-run status-bar item and the serializers that bring panels back after a reload.
 * A run that a training in this window is writing is followed through the trainer's events
 * (`trainings`); any other run through its files.
 */
export function registerPanels(context: vscode.ExtensionContext, log: vscode.OutputChannel, trainings?: LiveTrainings): PanelsApi {
  const sources = new RunSources((dir) => {
    const live = trainings?.get(dir);
    return live?.active ? new LiveRunSource(dir, live) : new RunDirectorySource(dir);
  });
  const panels: PanelContext = { extensionUri: context.extensionUri, sources, log };
  const runs = new RunsTreeProvider();
  const tree = vscode.window.createTreeView('rolloutStudio.runs', { treeDataProvider: runs });
  const statusBar = new RunStatusBar(sources);

  const trainingDirs = () => (trainings?.all() ?? []).map((t) => t.runDirectory);
  const refresh = (): RunEntry[] => {
    const entries = runs.refresh();
    statusBar.track(entries, trainingDirs());
    MetricsPanel.runsChanged();
    return entries;
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
        const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(root), glob));
        watcher.onDidCreate(refreshSoon);
        watcher.onDidChange(refreshSoon);
        watcher.onDidDelete(refreshSoon);
        return watcher;
      }),
    );
  };
  watchRuns();

  /** The run a command acts on: its argument, else the run selected in the view, else the newest run. */
  const chooseRun = (arg: unknown): { dir: string; step?: number } | undefined => {
    const named = runArgument(arg);
    if (named) return named;
    const selected = tree.selection.find((e) => e.run);
    const newest = runs.refresh().find((e) => e.run);
    const entry = selected ?? newest;
    if (entry) return { dir: entry.dir };
    const where = runsRoots().join(', ') || 'a workspace folder (none is open)';
    void vscode.window.showInformationMessage(`Rollout Studio: no runs yet. Runs appear in ${where} when training starts.`);
    return undefined;
  };
  const open = (arg: unknown, what: (run: { dir: string; step?: number }) => void): string | undefined => {
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
    vscode.commands.registerCommand('rolloutStudio.openTrajectories', (arg?: unknown) => open(arg, (run) => TrajectoriesPanel.show(panels, run.dir, run.step))),
    vscode.commands.registerCommand('rolloutStudio.openMetrics', (arg?: unknown) => open(arg, (run) => MetricsPanel.show(panels, run.dir))),
    vscode.commands.registerCommand('rolloutStudio.openRun', async (arg?: unknown) => {
      const run = arg === undefined ? await pickRun(runs.refresh()) : arg;
      if (run === undefined) return undefined;
      let trajectories: TrajectoriesPanel | undefined;
      if (!open(run, ({ dir, step }) => (trajectories = TrajectoriesPanel.show(panels, dir, step, vscode.ViewColumn.Active)))) return undefined;
      // Metrics opens once the Trajectories page has started (at most 4 s): in a browser-hosted
      // VS Code two webview frames created together fight over the webview service worker and
      // one of them loses its page for a reload or two (extension/panels/loadWebview.ts).
      await Promise.race([trajectories!.started, new Promise((resolve) => setTimeout(resolve, 4000))]);
      return open(run, ({ dir }) => MetricsPanel.show(panels, dir, vscode.ViewColumn.Beside));
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
  const stopFollowing = trainings?.onChange(() => refresh());
  if (stopFollowing) context.subscriptions.push({ dispose: stopFollowing });

  return {
    statusBar: () => ({ text: statusBar.text, runDir: statusBar.runDir, live: statusBar.live }),
    trajectoriesPanels: () => TrajectoriesPanel.all().map((p) => ({ runDir: p.runDir, selection: p.step.selection, shown: p.step.shown })),
    metricsPanels: () => MetricsPanel.all().map((p) => ({ runDirs: [...p.runDirs] })),
    refreshRuns: refresh,
  };
}
