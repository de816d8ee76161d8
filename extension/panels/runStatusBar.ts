import * as path from 'node:path';
import * as vscode from 'vscode';
import type { MetricsRecord } from '../../trainer/contract/protocol';
import type { RunSourceLease, RunSources } from './source/registry';
import { healthMarker, healthNotice, type HealthNotice, type NotifiedKeys } from './runHealth';
import { latestTrainMetrics, runStatusText } from './runStatusText';
import type { RunEntry } from './workspaceRuns';

/**
 * The status-bar item of a live run: step, mean reward and rollout tokens per second of the
 * newest run whose status is `running`, updated from its run source as records arrive (for a
 * training running in this editor, its LiveRunSource: also the phase in flight), hidden when no
 * run is live. Clicking it opens the run's panels.
 *
 * Beside it, while the newest step has health warnings, a marker (critical ones on the error
 * background) whose tooltip says what was seen and what to try; a click on it opens the Metrics
 * panel. The run's first critical warning, and each other warning code once, also come as a
 * notification (runHealth.ts decides which).
 */
export class RunStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'rolloutStudio.liveRun',
    vscode.StatusBarAlignment.Left,
    20,
  );
  private readonly health = vscode.window.createStatusBarItem(
    'rolloutStudio.runHealth',
    vscode.StatusBarAlignment.Left,
    19,
  );
  private lease: RunSourceLease | undefined;
  private unsubscribe: (() => void) | undefined;
  /** The notifications shown, oldest first (for the extension's API and its tests). */
  readonly notices: Array<HealthNotice & { runDir: string }> = [];

  constructor(
    private readonly sources: RunSources,
    private readonly notified: NotifiedKeys = inMemoryKeys(),
  ) {
    this.item.name = 'Rollout Studio: live run';
    this.health.name = 'Rollout Studio: health of the live run';
  }

  /** The health marker while shown; `critical`: on the error background; `command`: what a click runs. */
  get healthMarker(): { text: string; tooltip: string; critical: boolean; command: vscode.Command } | undefined {
    if (!this.lease || !this.health.text) return undefined;
    const background = this.health.backgroundColor as vscode.ThemeColor | undefined;
    return {
      text: this.health.text,
      tooltip: String(this.health.tooltip),
      critical: background?.id === 'statusBarItem.errorBackground',
      command: this.health.command as vscode.Command,
    };
  }

  /** The text shown now, or undefined while hidden. */
  get text(): string | undefined {
    return this.lease ? this.item.text : undefined;
  }

  /** The run shown, if any. */
  get runDir(): string | undefined {
    return this.lease?.source.dir;
  }

  /** Whether the run shown is a training in this window, followed through its live events. */
  get live(): boolean {
    return this.lease?.source.progress !== undefined;
  }

  /**
   * Follow the newest training running in this window (`trainingDirs`, oldest first: wherever
   * its config writes), else the newest run among `runs` (newest first) whose status is running,
   * or hide.
   */
  track(runs: readonly RunEntry[], trainingDirs: readonly string[] = []): void {
    const live = trainingDirs.at(-1) ?? runs.find((r) => r.run?.status === 'running')?.dir;
    if (live !== undefined && this.lease && path.resolve(live) === path.resolve(this.lease.source.dir)) return;
    this.stop();
    if (!live) return;
    try {
      this.lease = this.sources.acquire(live);
    } catch {
      return; // unreadable right now; the next refresh of the runs tries again
    }
    this.unsubscribe = this.lease.source.onUpdate((update) => {
      if (update.type === 'run' && update.run.status !== 'running') this.stop();
      else if (update.type === 'run' || update.type === 'metrics' || update.type === 'progress') this.render();
      if (update.type === 'metrics') this.notify(update.records);
    });
    this.render();
    // Warnings recorded before this window followed the run are told too (each once per run).
    this.notify(this.lease.source.metrics());
  }

  dispose(): void {
    this.stop();
    this.item.dispose();
    this.health.dispose();
  }

  private render(): void {
    if (!this.lease) return;
    const { source } = this.lease;
    const { text, tooltip } = runStatusText(source.run(), latestTrainMetrics(source.metrics()), source.progress?.());
    this.item.text = text;
    this.item.tooltip = tooltip;
    // The panels it opens follow the newest run: the next training takes this one's place in them.
    this.item.command = {
      command: 'rolloutStudio.openRun',
      title: 'Open Run',
      arguments: [{ runDirectory: source.dir, followsNewest: true }],
    };
    this.item.show();
    this.renderHealth();
  }

  private renderHealth(): void {
    const { source } = this.lease!;
    const marker = healthMarker(source.metrics());
    if (!marker) {
      this.health.text = '';
      this.health.hide();
      return;
    }
    this.health.text = marker.text;
    this.health.tooltip = marker.tooltip;
    this.health.backgroundColor = new vscode.ThemeColor(
      marker.severity === 'critical' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground',
    );
    this.health.command = {
      command: 'rolloutStudio.openMetrics',
      title: 'Open Metrics',
      arguments: [{ runDirectory: source.dir, followsNewest: true }],
    };
    this.health.show();
  }

  private notify(records: readonly MetricsRecord[]): void {
    if (!this.lease) return;
    const { source } = this.lease;
    const notice = healthNotice({ key: path.resolve(source.dir), name: source.run().name }, records, this.notified);
    if (!notice) return;
    this.notices.push({ ...notice, runDir: source.dir });
    const show = notice.severity === 'critical' ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    const runDirectory = source.dir;
    void show(notice.message, 'Open Metrics').then((choice) => {
      if (choice)
        void vscode.commands.executeCommand('rolloutStudio.openMetrics', { runDirectory, followsNewest: true });
    });
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.lease?.release();
    this.lease = undefined;
    this.item.hide();
    this.health.text = '';
    this.health.hide();
  }
}

function inMemoryKeys(): NotifiedKeys {
  const keys = new Set<string>();
  return { has: (key) => keys.has(key), add: (key) => void keys.add(key) };
}
