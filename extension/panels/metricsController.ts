import * as path from 'node:path';
import { MetricsToHost, parseWith, type MetricsToWebview, type RunSummary } from '../../trainer/contract/protocol';
import { toMetricsColumns } from './metricsColumns';
import type { RunSourceLease } from './source/registry';
import { runSummaryOf } from './source/summarize';

export interface MetricsHost {
  /** The run's shared source; throws when the directory is not a readable run. */
  acquire(dir: string): RunSourceLease;
  /** The workspace's runs, newest first, for the comparison chooser. */
  availableRuns(): RunSummary[];
  /** Ask where to save and write the CSV; resolves to the file written, or undefined when cancelled. */
  saveCsv(fileName: string, csv: string): Promise<string | undefined>;
  /** The user ticked or unticked "Follow newest run" (the panel decides which run it shows). */
  followNewestRun?(follow: boolean): void;
}

interface ShownRun {
  lease: RunSourceLease;
  unsubscribe: () => void;
}

/**
 * The host side of the Metrics panel, without VS Code: sends each shown run's metrics once as
 * columns and then only the records appended since, overlays the runs the webview asks for,
 * and saves the CSV the webview exports.
 */
export class MetricsController {
  private readonly shown = new Map<string, ShownRun>();
  private order: string[];
  private ready = false;

  constructor(
    private readonly host: MetricsHost,
    private readonly post: (message: MetricsToWebview) => void,
    runDirs: readonly string[],
  ) {
    this.order = runDirs.map((d) => path.resolve(d));
  }

  /** The runs shown, the panel's own run first. */
  get runDirs(): readonly string[] {
    return this.order;
  }

  receive(raw: unknown): void {
    const message = parseWith(MetricsToHost, raw, 'message from the Metrics panel');
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.showRuns(this.order, true);
        break;
      case 'showRuns':
        this.showRuns(message.runDirs);
        break;
      case 'followNewestRun':
        this.host.followNewestRun?.(message.follow);
        break;
      case 'exportCsv':
        this.host.saveCsv(message.fileName, message.csv).then(
          (file) => file && this.post({ type: 'notice', level: 'info', message: `Saved ${file}` }),
          (error: unknown) =>
            this.post({
              type: 'notice',
              level: 'error',
              message: `Could not save the CSV: ${error instanceof Error ? error.message : String(error)}`,
            }),
        );
        break;
    }
  }

  /**
   * Show `dir` as the panel's own run instead of the one shown (the panel follows the newest
   * run); the runs overlaid for comparison stay. Throws when the directory is not a readable run.
   */
  replaceOwnRun(dir: string): void {
    const own = path.resolve(dir);
    this.host.acquire(own).release(); // validates the run before anything changes
    const dirs = [own, ...this.order.slice(1).filter((d) => d !== own)];
    if (this.ready) this.showRuns(dirs);
    else this.order = dirs;
  }

  /** The workspace's runs changed: refresh the chooser. */
  runsChanged(): void {
    if (this.ready) this.postRuns();
  }

  dispose(): void {
    this.clear();
  }

  /** Show `dirs`; `resend`: the webview starts empty, so every run's metrics go again. */
  private showRuns(dirs: readonly string[], resend = false): void {
    const wanted = [...new Set(dirs.map((d) => path.resolve(d)))];
    for (const dir of [...this.shown.keys()]) if (!wanted.includes(dir)) this.drop(dir);
    const added: string[] = [];
    for (const dir of wanted) {
      if (this.shown.has(dir)) continue;
      try {
        const lease = this.host.acquire(dir);
        const unsubscribe = lease.source.onUpdate((update) => {
          if (!this.ready) return;
          if (update.type === 'metrics')
            this.post({
              type: 'metrics',
              runDir: dir,
              reset: update.reset ?? false,
              columns: toMetricsColumns(update.records),
            });
          else if (update.type === 'run') this.post({ type: 'run', run: runSummaryOf(dir, update.run) });
          else if (update.type === 'error') this.post({ type: 'notice', level: 'error', message: update.message });
        });
        this.shown.set(dir, { lease, unsubscribe });
        added.push(dir);
      } catch (error) {
        this.post({ type: 'notice', level: 'error', message: `Cannot show ${dir}: ${(error as Error).message}` });
      }
    }
    this.order = wanted.filter((d) => this.shown.has(d));
    this.postRuns();
    for (const dir of resend ? this.order : added) {
      const { source } = this.shown.get(dir)!.lease;
      this.post({ type: 'run', run: runSummaryOf(dir, source.run()) });
      this.post({ type: 'metrics', runDir: dir, reset: true, columns: toMetricsColumns(source.metrics()) });
    }
  }

  private postRuns(): void {
    const available = this.host.availableRuns();
    // Shown runs stay listed even when they live outside the workspace's runs folder.
    for (const dir of this.order) {
      if (!available.some((r) => path.resolve(r.dir) === dir))
        available.push(runSummaryOf(dir, this.shown.get(dir)!.lease.source.run()));
    }
    this.post({ type: 'runs', available, shown: this.order });
  }

  private drop(dir: string): void {
    const entry = this.shown.get(dir);
    if (!entry) return;
    entry.unsubscribe();
    entry.lease.release();
    this.shown.delete(dir);
  }

  private clear(): void {
    for (const dir of [...this.shown.keys()]) this.drop(dir);
  }
}
