import * as path from 'node:path';
import * as vscode from 'vscode';
import { MetricsPanelState, type MetricsToWebview, type RunRef } from '../../trainer/contract/protocol';
import { MetricsController, type MetricsHost } from './metricsController';
import type { PanelContext, PanelPlacement } from './panelContext';
import { RunPanelHost, RunPanels } from './runPanelHost';
import { workspaceRunSummaries } from './workspaceRuns';

const METRICS = new RunPanels<MetricsPanel, MetricsPanelState>({
  viewType: 'rolloutStudio.metrics',
  app: 'metrics',
  name: 'Metrics',
  saved: MetricsPanelState,
  savedRunDir: (saved) => saved.runDirs[0],
});

/**
 * The Metrics webview of one run (with other runs overlaid): VS Code's side of it (the logic is
 * MetricsController; the page, its handshake and following the newest run are RunPanelHost's).
 * A panel that follows the newest run moves its own run to a run that starts later; the runs
 * overlaid stay.
 */
export class MetricsPanel {
  static readonly viewType = METRICS.kind.viewType;

  private readonly controller: MetricsController;
  private readonly host: RunPanelHost<MetricsToWebview>;

  private constructor(
    readonly panel: vscode.WebviewPanel,
    context: PanelContext,
    runDirs: readonly string[],
    followsNewest: boolean,
    recreations = 0,
  ) {
    const host: MetricsHost = {
      acquire: (dir) => context.sources.acquire(dir),
      availableRuns: workspaceRunSummaries,
      saveCsv,
      followNewestRun: (follow) => this.host.following.setFollowsNewest(follow),
    };
    this.controller = new MetricsController(host, (message) => this.host.post(message), runDirs);
    panel.title = metricsTitle(context, runDirs[0]);
    this.host = new RunPanelHost(
      panel,
      context,
      { panels: METRICS, owner: this },
      { followsNewest, recreations },
      {
        runDir: () => this.runDir,
        showRun: (dir) => {
          try {
            this.controller.replaceOwnRun(dir);
          } catch (error) {
            context.log.appendLine(`Metrics: cannot show ${dir}: ${(error as Error).message}`);
            return false;
          }
          panel.title = metricsTitle(context, dir);
          return true;
        },
        receive: (raw) => this.controller.receive(raw),
        dispose: () => this.controller.dispose(),
        reopener: () => {
          const dirs = this.controller.runDirs;
          const follows = this.followsNewest;
          return (twin, again) => new MetricsPanel(twin, context, dirs, follows, again);
        },
      },
    );
  }

  /** The runs shown, the panel's own run first. */
  get runDirs(): readonly string[] {
    return this.controller.runDirs;
  }

  /** The panel's own run. */
  get runDir(): string {
    return this.controller.runDirs[0];
  }

  get followsNewest(): boolean {
    return this.host.following.followsNewest;
  }

  /** A run became the newest: follow it, or (pinned) say that it started. */
  newestRunChanged(run: RunRef): void {
    this.host.following.newestChanged(run);
  }

  static all(): MetricsPanel[] {
    return METRICS.all();
  }

  /** The workspace's runs changed: every Metrics panel refreshes its run chooser. */
  static runsChanged(): void {
    for (const panel of METRICS.all()) panel.controller.runsChanged();
  }

  /**
   * Open (or reveal) the Metrics panel of the run; `followsNewest`: a new panel follows the
   * newest run. Throws when the directory is not a readable run.
   */
  static show(context: PanelContext, runDir: string, options: PanelPlacement = {}): MetricsPanel {
    const existing = METRICS.reveal(runDir, options);
    if (existing) return existing;
    const dir = path.resolve(runDir);
    const title = metricsTitle(context, dir); // validates the run before a panel opens
    const panel = METRICS.create(context, title, options);
    return new MetricsPanel(panel, context, [dir], options.followsNewest ?? false);
  }

  /** The serializer that brings a panel back after a window reload with the runs, smoothing and band it had. */
  static serializer(context: PanelContext): vscode.Disposable {
    return METRICS.serializer(
      context,
      (panel, { runDirs, followsNewest }) => new MetricsPanel(panel, context, runDirs, followsNewest),
    );
  }
}

/** `Metrics · <run id>`; throws when the directory is not a readable run. */
function metricsTitle(context: PanelContext, dir: string): string {
  const lease = context.sources.acquire(dir);
  try {
    return `Metrics · ${lease.source.run().id}`;
  } finally {
    lease.release();
  }
}

async function saveCsv(fileName: string, csv: string): Promise<string | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    title: 'Export metrics as CSV',
    ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, fileName) } : {}),
    filters: { 'CSV files': ['csv'] },
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(csv));
  return target.fsPath;
}
