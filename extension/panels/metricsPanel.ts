import * as path from 'node:path';
import * as vscode from 'vscode';
import { MetricsPanelState } from '../../trainer/shared/protocol';
import { reopenInPlace, unavailableHtml, webviewHtml, webviewOptions } from '../webviewHtml';
import { MetricsController, type MetricsHost } from './metricsController';
import { loadWebview } from './loadWebview';
import type { PanelContext } from './panelContext';
import { workspaceRunSummaries } from './workspaceRuns';

/** The Metrics webview of one run (with other runs overlaid): VS Code's side of it (the logic is MetricsController). */
export class MetricsPanel {
  static readonly viewType = 'rolloutStudio.metrics';
  private static readonly panels = new Set<MetricsPanel>();

  private readonly controller: MetricsController;

  private constructor(
    readonly panel: vscode.WebviewPanel,
    context: PanelContext,
    runDirs: readonly string[],
    title: string,
    recreations = 0,
  ) {
    panel.title = title;
    const host: MetricsHost = {
      acquire: (dir) => context.sources.acquire(dir),
      availableRuns: workspaceRunSummaries,
      saveCsv,
    };
    this.controller = new MetricsController(host, (message) => void panel.webview.postMessage(message), runDirs);
    panel.webview.onDidReceiveMessage((raw) => {
      try {
        this.controller.receive(raw);
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
      reopenInPlace(panel, context.extensionUri, (line) => context.log.appendLine(line), (twin) => new MetricsPanel(twin, context, dirs, title, recreations + 1));
    };
    loadWebview(panel, () => webviewHtml(panel.webview, context.extensionUri, 'metrics', title), (line) => context.log.appendLine(line), { recreate, recreations });
    MetricsPanel.panels.add(this);
  }

  /** The runs shown, the panel's own run first. */
  get runDirs(): readonly string[] {
    return this.controller.runDirs;
  }

  static all(): MetricsPanel[] {
    return [...MetricsPanel.panels];
  }

  /** The workspace's runs changed: every Metrics panel refreshes its run chooser. */
  static runsChanged(): void {
    for (const panel of MetricsPanel.panels) panel.controller.runsChanged();
  }

  /** Open (or reveal) the Metrics panel of the run. Throws when the directory is not a readable run. */
  static show(context: PanelContext, runDir: string, column = vscode.ViewColumn.Active): MetricsPanel {
    const dir = path.resolve(runDir);
    const existing = [...MetricsPanel.panels].find((p) => p.runDirs[0] === dir);
    if (existing) {
      existing.panel.reveal();
      return existing;
    }
    const lease = context.sources.acquire(dir); // validates the run before a panel opens
    const title = `Metrics · ${lease.source.run().id}`;
    lease.release();
    const panel = vscode.window.createWebviewPanel(MetricsPanel.viewType, title, column, webviewOptions(context.extensionUri));
    return new MetricsPanel(panel, context, [dir], title);
  }

  /** WebviewPanelSerializer: bring a panel back after a window reload with the runs, smoothing and band it had. */
  static restore(context: PanelContext, panel: vscode.WebviewPanel, state: unknown): void {
    const parsed = MetricsPanelState.safeParse(state);
    if (!parsed.success) {
      panel.webview.html = unavailableHtml('Metrics', 'This panel has no saved run to show. Open Metrics again from the Rollout Runs view.');
      return;
    }
    new MetricsPanel(panel, context, parsed.data.runDirs, `Metrics · ${path.basename(parsed.data.runDirs[0])}`);
  }
}

async function saveCsv(fileName: string, csv: string): Promise<string | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({
    title: 'Export metrics as CSV',
    defaultUri: folder ? vscode.Uri.joinPath(folder, fileName) : undefined,
    filters: { 'CSV files': ['csv'] },
  });
  if (!target) return undefined;
  await vscode.workspace.fs.writeFile(target, new TextEncoder().encode(csv));
  return target.fsPath;
}
