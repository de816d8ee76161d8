import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  MetricsRecord,
  stepFileName,
  trajectoryFile,
  TrajectoryRecord,
  TrajectoryRecordWithoutTokens,
  type RunRecord,
  type TrajectoryRow,
} from '../../../trainer/contract/protocol';
import { JsonlTail, RunStoreReader, type LineLocation } from '../../../trainer/contract/runstore';
import { metricsKey, trajectoryKey } from '../../../trainer/contract/runstore/recordKeys';
import { UpdateEmitter, type RunSource, type RunUpdate } from './runSource';
import { summarizeTrajectory } from './summarize';

export interface RunDirectorySourceOptions {
  /**
   * How often the files are looked at even without a watcher event (fs.watch misses events on
   * network and container file systems). 0: never; tests then call refresh() themselves.
   */
  pollIntervalMs?: number;
  /** Use fs.watch for prompt updates (default true). */
  watch?: boolean;
  /** Steps whose rows stay in memory besides the followed ones; older ones are read again on demand. */
  cachedSteps?: number;
  /**
   * Bytes of a step's file read at once. A larger step is read a part at a time, yielding to
   * the event loop in between, its later rows arriving as `rows` updates: opening a step of
   * thousands of trajectories never blocks the extension host for long.
   */
  readBudgetBytes?: number;
}

/** A step's rows, and where each trajectory's line is so its full record can be read on demand. */
interface LoadedStep {
  /** Rows need no token data, so the file is followed without it; a detail reads its line again in full. */
  tail: JsonlTail<typeof TrajectoryRecordWithoutTokens>;
  rows: TrajectoryRow[];
  locations: Map<number, LineLocation>;
  followers: number;
  /** Set while the rest of the file is read in the background; resolves when it is all read. */
  loading: Promise<void> | undefined;
}

const MAX_KEPT_ERRORS = 20;

/** An evaluation read whole (they are a few hundred held-out rows at most), with the file's stamp when read. */
interface LoadedEvaluation {
  stamp: string;
  records: TrajectoryRecord[];
  rows: TrajectoryRow[];
}

/**
 * A run directory on disk, followed as it grows. Reads only what was appended since the last
 * look (metrics.jsonl and the rollouts files of the steps being shown), keeps trajectories as
 * table rows and reads a full trajectory again from its file when its detail opens, so a step of
 * thousands of trajectories costs a few hundred bytes each in memory.
 */
export class RunDirectorySource implements RunSource {
  private readonly reader: RunStoreReader;
  private readonly emitter = new UpdateEmitter();
  private readonly metricsTail: JsonlTail<typeof MetricsRecord>;
  private readonly metricsRecords: MetricsRecord[] = [];
  private readonly loaded = new Map<number, LoadedStep>();
  private readonly readErrors: string[] = [];
  private current: RunRecord;
  private runStamp: string;
  private stepList: number[];
  private stepsStamp: string;
  private evaluationList: number[];
  private evaluationsStamp: string;
  private readonly loadedEvaluations = new Map<number, LoadedEvaluation>();
  private watchers: fs.FSWatcher[] = [];
  private timer: NodeJS.Timeout | undefined;
  private refreshQueued: NodeJS.Timeout | undefined;
  private disposed = false;
  private watching = false;
  private rolloutsWatched = false;
  private lastError: string | undefined;
  private readonly cachedSteps: number;
  private readonly readBudget: number;

  constructor(
    readonly dir: string,
    options: RunDirectorySourceOptions = {},
  ) {
    this.reader = new RunStoreReader(dir);
    this.current = this.reader.run();
    this.runStamp = stamp(path.join(dir, 'run.json'));
    this.stepsStamp = stamp(path.join(dir, 'rollouts'));
    this.stepList = this.reader.steps();
    this.evaluationsStamp = stamp(path.join(dir, 'evals'));
    this.evaluationList = this.reader.evaluations();
    this.cachedSteps = options.cachedSteps ?? 4;
    this.readBudget = options.readBudgetBytes ?? 2 << 20;
    this.metricsTail = new JsonlTail(path.join(dir, 'metrics.jsonl'), MetricsRecord, { key: metricsKey });
    const metrics = this.metricsTail.read();
    this.metricsRecords.push(...metrics.records);
    metrics.errors.forEach((e) => this.keepError(e));
    if (options.watch ?? true) this.startWatching();
    const poll = options.pollIntervalMs ?? 1000;
    if (poll > 0) {
      this.timer = setInterval(() => this.refresh(), poll);
      this.timer.unref();
    }
  }

  run(): RunRecord {
    return this.current;
  }

  steps(): number[] {
    return this.stepList;
  }

  metrics(): readonly MetricsRecord[] {
    return this.metricsRecords;
  }

  errors(): readonly string[] {
    return this.readErrors;
  }

  rows(step: number): readonly TrajectoryRow[] {
    return this.load(step).rows;
  }

  /** Keep the step's rows loaded and report its new trajectories until the returned function is called. */
  follow(step: number): () => void {
    const loaded = this.load(step);
    loaded.followers++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      loaded.followers--;
      this.evict();
    };
  }

  /** Resolves when the step's file has been read to its end (a large one is read in parts). */
  async whenRead(step: number): Promise<void> {
    for (let loading = this.load(step).loading; loading; loading = this.loaded.get(step)?.loading) await loading;
  }

  trajectory(step: number, index: number): TrajectoryRecord | undefined {
    const loaded = this.load(step);
    const location = loaded.locations.get(index);
    return location ? loaded.tail.readAt(location, TrajectoryRecord) : undefined;
  }

  evaluations(): number[] {
    return this.evaluationList;
  }

  evaluationRows(step: number): readonly TrajectoryRow[] {
    return this.loadEvaluation(step)?.rows ?? [];
  }

  evaluationTrajectory(step: number, index: number): TrajectoryRecord | undefined {
    return this.loadEvaluation(step)?.records.find((r) => r.index === index);
  }

  onUpdate(listener: (update: RunUpdate) => void): () => void {
    return this.emitter.on(listener);
  }

  /** Look at the files now and report what changed. Watchers and the poll timer call this. */
  refresh(): void {
    if (this.disposed) return;
    try {
      this.refreshRun();
      this.refreshSteps();
      this.refreshEvaluations();
      this.refreshMetrics();
      for (const [step, loaded] of this.loaded) if (!loaded.loading) this.refreshStep(step, loaded);
      this.lastError = undefined;
    } catch (error) {
      const message = (error as Error).message;
      // A missing or unreadable directory is reported once, not on every poll.
      if (message !== this.lastError) this.emitter.emit({ type: 'error', message });
      this.lastError = message;
    }
  }

  dispose(): void {
    this.disposed = true;
    for (const watcher of this.watchers) watcher.close();
    this.watchers = [];
    if (this.timer) clearInterval(this.timer);
    if (this.refreshQueued) clearTimeout(this.refreshQueued);
    this.emitter.clear();
    this.loaded.clear();
    this.loadedEvaluations.clear();
  }

  /** The evaluation's records, read again when its file changed; undefined (and reported) when it cannot be read. */
  private loadEvaluation(step: number): LoadedEvaluation | undefined {
    const file = path.join(this.dir, trajectoryFile('eval', step));
    const now = stamp(file);
    const cached = this.loadedEvaluations.get(step);
    if (cached && cached.stamp === now) return cached;
    try {
      const records = this.reader.evaluationTrajectories(step).records;
      const loaded = { stamp: now, records, rows: records.map(summarizeTrajectory) };
      this.loadedEvaluations.set(step, loaded);
      // Only the evaluations recently looked at stay in memory.
      for (const key of [...this.loadedEvaluations.keys()].slice(0, -2)) this.loadedEvaluations.delete(key);
      return loaded;
    } catch (error) {
      this.reportError((error as Error).message);
      return undefined;
    }
  }

  private load(step: number): LoadedStep {
    const loaded = this.loaded.get(step);
    if (loaded) {
      // Most recently used last, so eviction drops the least recently used.
      this.loaded.delete(step);
      this.loaded.set(step, loaded);
      return loaded;
    }
    const fresh: LoadedStep = {
      tail: new JsonlTail(
        path.join(this.dir, 'rollouts', `${stepFileName(step)}.jsonl`),
        TrajectoryRecordWithoutTokens,
        { key: trajectoryKey },
      ),
      rows: [],
      locations: new Map(),
      followers: 0,
      loading: undefined,
    };
    const { more } = this.readStep(fresh, this.readBudget);
    if (more) fresh.loading = this.readRest(step, fresh);
    this.loaded.set(step, fresh);
    this.evict();
    return fresh;
  }

  /** Read the rest of a large step a part at a time, reporting each part's rows. */
  private async readRest(step: number, loaded: LoadedStep): Promise<void> {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.disposed || this.loaded.get(step) !== loaded) break;
      const { rows, restarted, more } = this.readStep(loaded, this.readBudget, (e) => this.reportError(e));
      if (rows.length || restarted)
        this.emitter.emit({ type: 'rows', step, rows, ...(restarted ? { reset: true } : {}) });
      if (!more) break;
    }
    loaded.loading = undefined;
  }

  private evict(): void {
    let unfollowed = [...this.loaded].filter(([, s]) => s.followers === 0);
    while (unfollowed.length > this.cachedSteps) {
      this.loaded.delete(unfollowed[0][0]);
      unfollowed = unfollowed.slice(1);
    }
  }

  /** Append what the step's file gained; returns the new rows. */
  private readStep(
    loaded: LoadedStep,
    budget = Number.POSITIVE_INFINITY,
    report: (message: string) => void = (e) => this.keepError(e),
  ): { rows: TrajectoryRow[]; restarted: boolean; more: boolean } {
    const read = loaded.tail.read(budget);
    if (read.restarted) {
      loaded.rows = [];
      loaded.locations.clear();
    }
    read.errors.forEach(report);
    const rows = read.records.map(summarizeTrajectory);
    read.records.forEach((record, i) => loaded.locations.set(record.index, read.locations[i]));
    for (const row of rows) loaded.rows.push(row);
    return { rows, restarted: read.restarted, more: read.more };
  }

  private refreshRun(): void {
    const next = stamp(path.join(this.dir, 'run.json'));
    // A running run is read again at every look even when run.json is unchanged: its writer may
    // have been killed, and the reader then says interrupted (the lock's holder is gone).
    if (next === this.runStamp && this.current.status !== 'running') return;
    const run = this.reader.run();
    this.runStamp = next;
    if (JSON.stringify(run) === JSON.stringify(this.current)) return;
    this.current = run;
    this.emitter.emit({ type: 'run', run });
  }

  private refreshSteps(): void {
    const next = stamp(path.join(this.dir, 'rollouts'));
    if (next === this.stepsStamp) return;
    this.stepsStamp = next;
    const steps = this.reader.steps();
    if (steps.length === this.stepList.length && steps.every((s, i) => s === this.stepList[i])) return;
    this.stepList = steps;
    if (!this.rolloutsWatched && this.watching) this.watchRollouts();
    this.emitter.emit({ type: 'steps', steps });
  }

  private refreshEvaluations(): void {
    const next = stamp(path.join(this.dir, 'evals'));
    if (next === this.evaluationsStamp) return;
    this.evaluationsStamp = next;
    const evaluations = this.reader.evaluations();
    if (evaluations.length === this.evaluationList.length && evaluations.every((s, i) => s === this.evaluationList[i]))
      return;
    this.evaluationList = evaluations;
    this.emitter.emit({ type: 'evaluations', evaluations });
  }

  private refreshMetrics(): void {
    const read = this.metricsTail.read();
    if (read.restarted) this.metricsRecords.length = 0;
    read.errors.forEach((e) => this.reportError(e));
    if (read.records.length === 0 && !read.restarted) return;
    this.metricsRecords.push(...read.records);
    this.emitter.emit({ type: 'metrics', records: read.records, ...(read.restarted ? { reset: true } : {}) });
  }

  private refreshStep(step: number, loaded: LoadedStep): void {
    const { rows, restarted } = this.readStep(loaded, Number.POSITIVE_INFINITY, (e) => this.reportError(e));
    if (rows.length || restarted)
      this.emitter.emit({ type: 'rows', step, rows, ...(restarted ? { reset: true } : {}) });
  }

  private keepError(message: string): void {
    this.readErrors.push(message);
    if (this.readErrors.length > MAX_KEPT_ERRORS) this.readErrors.shift();
  }

  private reportError(message: string): void {
    this.keepError(message);
    this.emitter.emit({ type: 'error', message });
  }

  private startWatching(): void {
    this.watching = true;
    try {
      this.watchers.push(fs.watch(this.dir, () => this.queueRefresh()));
      this.watchRollouts();
    } catch {
      // fs.watch is unavailable here (e.g. out of inotify watches): polling alone keeps up.
    }
  }

  private watchRollouts(): void {
    const rollouts = path.join(this.dir, 'rollouts');
    if (!fs.existsSync(rollouts)) return;
    try {
      this.watchers.push(fs.watch(rollouts, () => this.queueRefresh()));
      this.rolloutsWatched = true;
    } catch {
      // as above: polling covers it
    }
  }

  /** Bursts of watcher events (a write is several) become one refresh. */
  private queueRefresh(): void {
    if (this.refreshQueued || this.disposed) return;
    this.refreshQueued = setTimeout(() => {
      this.refreshQueued = undefined;
      this.refresh();
    }, 30);
  }
}

/** Changes whenever the file is replaced (atomic rename) or written. */
function stamp(file: string): string {
  try {
    const s = fs.statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}
