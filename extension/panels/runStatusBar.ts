import * as path from 'node:path';
import * as vscode from 'vscode';
import type { RunSourceLease, RunSources } from './source/registry';
import { latestTrainMetrics, runStatusText } from './runStatusText';
import type { RunEntry } from './workspaceRuns';

/**
 * The status-bar item of a live run: step, mean reward and rollout tokens per second of the
 * newest run whose status is `running`, updated from its run source as records arrive (for a
 * training running in this editor, its LiveRunSource: also the phase in flight), hidden when no
 * run is live. Clicking it opens the run's panels.
 */
export class RunStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('rolloutStudio.liveRun', vscode.StatusBarAlignment.Left, 20);
  private lease: RunSourceLease | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly sources: RunSources) {
    this.item.name = 'Rollout Studio: live run';
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
    });
    this.render();
  }

  dispose(): void {
    this.stop();
    this.item.dispose();
  }

  private render(): void {
    if (!this.lease) return;
    const { source } = this.lease;
    const { text, tooltip } = runStatusText(source.run(), latestTrainMetrics(source.metrics()), source.progress?.());
    this.item.text = text;
    this.item.tooltip = tooltip;
    // The panels it opens follow the newest run: the next training takes this one's place in them.
    this.item.command = { command: 'rolloutStudio.openRun', title: 'Open Run', arguments: [{ runDirectory: source.dir, followsNewest: true }] };
    this.item.show();
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.lease?.release();
    this.lease = undefined;
    this.item.hide();
  }
}
