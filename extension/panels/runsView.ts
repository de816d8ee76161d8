import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RunStatus } from '../../trainer/contract/protocol';
import { workspaceRuns, type RunEntry } from './workspaceRuns';

const STATUS_ICONS: Record<RunStatus, [string, string]> = {
  running: ['sync~spin', 'charts.blue'],
  finished: ['pass', 'testing.iconPassed'],
  failed: ['error', 'testing.iconFailed'],
  stopped: ['debug-stop', 'disabledForeground'],
  // Marked running by a writer that is gone (killed, crashed): see trainer/contract/runstore/runLock.ts.
  interrupted: ['debug-disconnect', 'problemsWarningIcon.foreground'],
};

/**
 * The Rollout Runs view: the workspace's runs, newest first, with their status. It lists none
 * until it is first refreshed (registerPanels.ts: once the workspace is a Rollout Studio workspace).
 */
export class RunsTreeProvider implements vscode.TreeDataProvider<RunEntry> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private entries: RunEntry[] = [];

  /** The runs as last listed. */
  get runs(): readonly RunEntry[] {
    return this.entries;
  }

  /** List the runs again; returns them. */
  refresh(): RunEntry[] {
    this.entries = workspaceRuns();
    this.changed.fire();
    return this.entries;
  }

  getChildren(element?: RunEntry): RunEntry[] {
    return element ? [] : this.entries;
  }

  getTreeItem(entry: RunEntry): vscode.TreeItem {
    if (!entry.run) {
      const item = new vscode.TreeItem(path.basename(entry.dir));
      item.description = 'unreadable run.json';
      item.tooltip = entry.error;
      item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'));
      item.contextValue = 'rolloutRunUnreadable';
      return item;
    }
    const run = entry.run;
    const item = new vscode.TreeItem(run.name);
    item.id = entry.dir;
    const step = run.lastStep !== undefined ? `step ${run.lastStep}/${run.totalSteps}` : `0/${run.totalSteps} steps`;
    item.description = `${run.id} · ${run.status} · ${step}`;
    const [icon, colour] = STATUS_ICONS[run.status];
    item.iconPath = new vscode.ThemeIcon(icon, new vscode.ThemeColor(colour));
    const tooltip = new vscode.MarkdownString(undefined, true);
    tooltip.appendMarkdown('**').appendText(run.name).appendMarkdown('** · ').appendText(run.id).appendMarkdown('\n\n');
    tooltip.appendText(`${run.status}, ${run.algorithm} on ${run.device}, ${step}`).appendMarkdown('\n\n');
    tooltip
      .appendText(
        `started ${new Date(run.createdAt).toLocaleString()}${run.endedAt ? `, ended ${new Date(run.endedAt).toLocaleString()}` : ''}`,
      )
      .appendMarkdown('\n\n');
    if (run.error) tooltip.appendMarkdown('$(error) ').appendText(run.error.message).appendMarkdown('\n\n');
    tooltip.appendText(entry.dir);
    item.tooltip = tooltip;
    item.contextValue = 'rolloutRun';
    item.command = { command: 'rolloutStudio.openRun', title: 'Open Run', arguments: [entry.dir] };
    return item;
  }
}
