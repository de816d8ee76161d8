import * as path from 'node:path';
import * as vscode from 'vscode';
import { MetricsPanelState, type RunRef } from '../../trainer/contract/protocol';
import { reopenInPlace, unavailableHtml, webviewHtml, webviewOptions } from '../webviewHtml';
import { MetricsController, type MetricsHost } from './metricsController';
import { loadWebview } from './loadWebview';
import type { PanelContext, PanelPlacement } from './panelContext';
import { RunFollowing } from './runFollowing';
import { workspaceRunSummaries } from './workspaceRuns';

/**
 * The Metrics webview of one run (with other runs overlaid): VS Code's side of it (the logic is
 * MetricsController). A panel that follows the newest run moves its own run to a run that starts
 * later (RunFollowing); the runs overlaid stay.
 */
export class MetricsPanel {
  static readonly viewType = 'rolloutStudio.metrics';
  private static readonly panels = new Set<MetricsPanel>();

  private readonly controller: MetricsController;
  private readonly following: RunFollowing;

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
      followNewestRun: (follow) => this.following.setFollowsNewest(follow),
    };
    this.controller = new MetricsController(host, (message) => void panel.webview.postMessage(message), runDirs);
    this.following = new RunFollowing(followsNewest, {
      dir: () => this.runDirs[0],
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
      newest: () => context.newestRun.run,
      post: (following) => void panel.webview.postMessage({ type: 'following', following }),
    });
    panel.title = metricsTitle(context, runDirs[0]);
    panel.webview.onDidReceiveMessage((raw) => {
      try {
        this.controller.receive(raw);
        if ((raw as { type?: unknown } | undefined)?.type === 'ready') this.following.announce();
      } catch (error) {
        context.log.appendLine(String(error));
      }
    });
    panel.onDidDispose(() => {
      this.controller.dispose();
      MetricsPanel.panels.delete(this);
    });
    // A frame whose page never starts is replaced by a new panel in the same place, with the same runs.
    const recreate = () => {
      const dirs = this.controller.runDirs;
      const follows = this.following.followsNewest;
      reopenInPlace(
        panel,
        context.extensionUri,
        (line) => context.log.appendLine(line),
        (twin) => new MetricsPanel(twin, context, dirs, follows, recreations + 1),
      );
    };
    loadWebview(
      panel,
      () => webviewHtml(panel.webview, context.extensionUri, 'metrics', panel.title),
      (line) => context.log.appendLine(line),
      { recreate, recreations },
    );
    MetricsPanel.panels.add(this);
  }

  /** The runs shown, the panel's own run first. */
  get runDirs(): readonly string[] {
    return this.controller.runDirs;
  }

  get followsNewest(): boolean {
    return this.following.followsNewest;
  }

  /** A run became the newest: follow it, or (pinned) say that it started. */
  newestRunChanged(run: RunRef): void {
    this.following.newestChanged(run);
  }

  static all(): MetricsPanel[] {
    return [...MetricsPanel.panels];
  }

  /** The workspace's runs changed: every Metrics panel refreshes its run chooser. */
  static runsChanged(): void {
    for (const panel of MetricsPanel.panels) panel.controller.runsChanged();
  }

  /**
   * Open (or reveal) the Metrics panel of the run; `followsNewest`: a new panel follows the
   * newest run. Throws when the directory is not a readable run.
   */
  static show(context: PanelContext, runDir: string, options: PanelPlacement = {}): MetricsPanel {
    const { followsNewest = false, column = vscode.ViewColumn.Active, preserveFocus = false } = options;
    const dir = path.resolve(runDir);
    const showing = [...MetricsPanel.panels].filter((p) => p.runDirs[0] === dir);
    const existing = showing.find((p) => p.followsNewest === followsNewest) ?? showing[0];
    if (existing) {
      existing.panel.reveal(undefined, preserveFocus);
      return existing;
    }
    const title = metricsTitle(context, dir); // validates the run before a panel opens
    const panel = vscode.window.createWebviewPanel(
      MetricsPanel.viewType,
      title,
      { viewColumn: column, preserveFocus },
      webviewOptions(context.extensionUri),
    );
    return new MetricsPanel(panel, context, [dir], followsNewest);
  }

  /** WebviewPanelSerializer: bring a panel back after a window reload with the runs, smoothing and band it had. */
  static restore(context: PanelContext, panel: vscode.WebviewPanel, state: unknown): void {
    const parsed = MetricsPanelState.safeParse(state);
    if (!parsed.success) {
      panel.webview.html = unavailableHtml(
        'Metrics',
        'This panel has no saved run to show. Open Metrics again from the Rollout Runs view.',
      );
      return;
    }
    const { runDirs, followsNewest } = parsed.data;
    let restored: MetricsPanel;
    try {
      restored = new MetricsPanel(panel, context, runDirs, followsNewest);
    } catch (error) {
      panel.webview.html = unavailableHtml(
        'Metrics',
        `${runDirs[0]} can no longer be shown: ${(error as Error).message}`,
      );
      return;
    }
    const newest = context.newestRun.run;
    if (followsNewest && newest) restored.newestRunChanged(newest);
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
