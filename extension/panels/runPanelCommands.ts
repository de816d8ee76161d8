import * as vscode from 'vscode';
import { MetricsPanel } from './metricsPanel';
import type { PanelContext, PanelPlacement } from './panelContext';
import type { RunsTreeProvider } from './runsView';
import { TrajectoriesPanel } from './trajectoriesPanel';
import { runsRoots, type RunEntry } from './workspaceRuns';

/**
 * The commands that open a run's panels (Open Trajectories, Open Metrics, Open Run…) and
 * Refresh Runs, registered by registerPanels.ts.
 */

/** A run a command opens; `followsNewest`: a panel it opens follows the newest run (else it stays on this one). */
interface RunChoice {
  dir: string;
  step?: number;
  followsNewest?: boolean;
}

/** What the commands use of the panels' parts. */
export interface RunCommandParts {
  panels: PanelContext;
  runs: RunsTreeProvider;
  tree: vscode.TreeView<RunEntry>;
  log: vscode.OutputChannel;
  /** The run directories of this window's trainings, oldest first. */
  trainingDirs: () => string[];
  /** Lists the runs again (and tells the status bar, the panels and the newest run). */
  refresh: () => RunEntry[];
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

/**
 * Open (or reveal) a run's Trajectories panel, then its Metrics panel in the column after it.
 * Metrics opens once the Trajectories page has started (at most 4 s): in a browser-hosted VS
 * Code two webview frames created together fight over the webview service worker and one of
 * them loses its page for a reload or two (extension/panels/loadWebview.ts).
 */
export async function openRunPanels(context: PanelContext, run: RunChoice, placement: PanelPlacement): Promise<void> {
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

/** The run a command acts on: its argument, else the run selected in the view, else the newest run (followed). */
function chooseRun(parts: RunCommandParts, arg: unknown): RunChoice | undefined {
  const named = runArgument(arg);
  if (named) return named;
  const selected = parts.tree.selection.find((e) => e.run);
  if (selected) return { dir: selected.dir };
  // A training of this window first (its config may write outside the runs folder), as the status bar does.
  const newest = parts.trainingDirs().at(-1) ?? parts.refresh().find((e) => e.run)?.dir;
  if (newest) return { dir: newest, followsNewest: true };
  const where = runsRoots().join(', ') || 'a workspace folder (none is open)';
  void vscode.window.showInformationMessage(
    `Rollout Studio: no runs yet. Runs appear in ${where} when training starts.`,
  );
  return undefined;
}

/** Says in the log and a message that `dir` could not be opened. */
function reportOpenFailure(parts: RunCommandParts, dir: string, error: unknown): undefined {
  const message = `Rollout Studio cannot open ${dir}: ${(error as Error).message}`;
  parts.log.appendLine(message);
  void vscode.window.showErrorMessage(message);
  return undefined;
}

/** Opens a panel of the run the argument chooses; returns its directory, or undefined when none opened. */
function openPanel(parts: RunCommandParts, arg: unknown, what: (run: RunChoice) => void): string | undefined {
  const run = chooseRun(parts, arg);
  if (!run) return undefined;
  try {
    what(run);
    return run.dir;
  } catch (error) {
    return reportOpenFailure(parts, run.dir, error);
  }
}

/** Open Run…: both panels of the run the argument names, else of one picked from a list. */
async function openRun(parts: RunCommandParts, arg: unknown): Promise<string | undefined> {
  const chosen = arg === undefined ? await pickRun(parts.refresh()) : arg;
  const run = chosen === undefined ? undefined : chooseRun(parts, chosen);
  if (!run) return undefined;
  try {
    await openRunPanels(parts.panels, run, { column: vscode.ViewColumn.Active });
    return run.dir;
  } catch (error) {
    return reportOpenFailure(parts, run.dir, error);
  }
}

export function registerRunCommands(parts: RunCommandParts): vscode.Disposable[] {
  const { panels } = parts;
  return [
    vscode.commands.registerCommand('rolloutStudio.openTrajectories', (arg?: unknown) =>
      openPanel(parts, arg, (run) =>
        TrajectoriesPanel.show(panels, run.dir, {
          followsNewest: run.followsNewest ?? false,
          ...(run.step !== undefined ? { step: run.step } : {}),
        }),
      ),
    ),
    vscode.commands.registerCommand('rolloutStudio.openMetrics', (arg?: unknown) =>
      openPanel(parts, arg, (run) => MetricsPanel.show(panels, run.dir, { followsNewest: run.followsNewest ?? false })),
    ),
    vscode.commands.registerCommand('rolloutStudio.openRun', (arg?: unknown) => openRun(parts, arg)),
    vscode.commands.registerCommand('rolloutStudio.refreshRuns', () => parts.refresh().length),
  ];
}
