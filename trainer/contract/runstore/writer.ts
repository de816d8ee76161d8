import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  imageFileName,
  MetricsRecord,
  RunRecord,
  stepFileName,
  trajectoryFile,
  TrajectoryRecord,
} from '../protocol/runStore';
import { parseWith } from '../protocol/parse';
import { CASSETTE_FILE, CassetteEntry } from '../protocol/cassetteFile';
import { appendJsonl, writeFileAtomic } from './jsonl';
import { RunStoreReader } from './reader';
import { RunDirectoryLock } from './runLock';
import { StorageError, storageError } from './storageError';

/**
 * Writes one run directory. Every record is validated before it is written, so a reader
 * never meets a record the schemas reject; every write is flushed before the call returns.
 * The writer holds the directory's lock (runLock.ts) from creation until `finish` or `close`:
 * one writer per run.
 */
export class RunStoreWriter {
  private run: RunRecord;

  private constructor(
    readonly dir: string,
    run: RunRecord,
    private readonly lock: RunDirectoryLock,
  ) {
    this.run = run;
  }

  /** Create `dir` (which must not hold a run yet), take its lock and write run.json. */
  static create(dir: string, run: RunRecord): RunStoreWriter {
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw storageError(error, dir, 'creating the run directory');
    }
    const lock = RunDirectoryLock.acquire(dir);
    try {
      if (fs.existsSync(path.join(dir, 'run.json')))
        throw new StorageError(
          `${dir} already holds a run; choose another run directory or resume it (--resume ${dir})`,
          path.join(dir, 'run.json'),
          'EEXIST',
        );
      for (const sub of ['rollouts', 'checkpoints']) {
        try {
          fs.mkdirSync(path.join(dir, sub), { recursive: true });
        } catch (error) {
          throw storageError(error, path.join(dir, sub), 'creating the run directory');
        }
      }
      const writer = new RunStoreWriter(dir, parseWith(RunRecord, run, 'run record'), lock);
      writer.writeRun();
      return writer;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** Continue writing an existing run (resume) under `lock`, taken before anything in it changed: status goes back to running. */
  static reopen(dir: string, run: RunRecord, lock: RunDirectoryLock): RunStoreWriter {
    const writer = new RunStoreWriter(
      dir,
      parseWith(RunRecord, { ...run, status: 'running', endedAt: undefined, error: undefined }, 'run record'),
      lock,
    );
    writer.writeRun();
    return writer;
  }

  get record(): RunRecord {
    return this.run;
  }

  update(patch: Partial<RunRecord>): void {
    this.run = parseWith(RunRecord, { ...this.run, ...patch }, 'run record');
    this.writeRun();
  }

  appendMetrics(record: MetricsRecord): void {
    appendJsonl(path.join(this.dir, 'metrics.jsonl'), [
      parseWith(MetricsRecord, record, `metrics of step ${record.step}`),
    ]);
  }

  /**
   * Write images the trajectories saw, by content hash (`images/<sha256>.<format>`; one that is
   * already there is not written again). Call it before appending the records that refer to them.
   */
  writeImages(images: readonly { sha256: string; format: 'png' | 'jpeg' | 'webp'; bytes: Uint8Array }[]): void {
    for (const image of images) {
      const file = path.join(this.dir, imageFileName(image.sha256, image.format));
      if (fs.existsSync(file)) continue;
      try {
        fs.mkdirSync(path.dirname(file), { recursive: true });
      } catch (error) {
        throw storageError(error, path.dirname(file), 'creating the images folder');
      }
      // Whole or not at all (a full disk leaves no half image), the error naming the file.
      writeFileAtomic(file, image.bytes);
    }
  }

  /** Append trajectories to the step's file (one call per step, or several as they finish). */
  appendTrajectories(step: number, trajectories: readonly TrajectoryRecord[]): void {
    const checked = trajectories.map((t) => parseWith(TrajectoryRecord, t, `trajectory ${t.index} of step ${step}`));
    appendJsonl(path.join(this.dir, 'rollouts', `${stepFileName(step)}.jsonl`), checked);
  }

  /**
   * The trajectories of the evaluation after `step` (0: before RL), written whole and at once:
   * a reader sees all of them or none, and an evaluation repeated after a resume replaces them.
   */
  writeEvaluation(step: number, trajectories: readonly TrajectoryRecord[]): void {
    const checked = trajectories.map((t) =>
      parseWith(TrajectoryRecord, t, `evaluation trajectory ${t.index} of step ${step}`),
    );
    const file = path.join(this.dir, trajectoryFile('eval', step));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, checked.map((t) => JSON.stringify(t) + '\n').join(''));
  }

  /** Append a tool round's recorded calls to `cassette.jsonl` (a run that records its tools). */
  appendCassette(entries: readonly CassetteEntry[]): void {
    const checked = entries.map((e) =>
      parseWith(CassetteEntry, e, `recorded ${e.tool} call of ${e.set} step ${e.step}, trajectory ${e.trajectory}`),
    );
    appendJsonl(path.join(this.dir, CASSETTE_FILE), checked);
  }

  /** Mark the step complete: its records are all written. */
  completeStep(step: number, checkpoint?: string): void {
    this.update({ lastStep: step, ...(checkpoint ? { lastCheckpoint: checkpoint } : {}) });
  }

  /** The run's end: its status written, its lock released. */
  finish(status: 'finished' | 'failed' | 'stopped', error?: RunRecord['error']): void {
    try {
      this.update({ status, endedAt: new Date().toISOString(), ...(error ? { error } : {}) });
    } finally {
      this.close();
    }
  }

  /** Release the run's lock without writing (the run ended without `finish`: readers will show it interrupted). */
  close(): void {
    this.lock.release();
  }

  private writeRun(): void {
    writeFileAtomic(path.join(this.dir, 'run.json'), JSON.stringify(this.run, null, 2) + '\n');
  }
}

/**
 * Cut a run back to its checkpoint at `step`, for a resume from it: everything recorded after that
 * checkpoint was saved goes, and the resumed run records it again — the training trajectories and
 * metrics of the steps after `step`, and the evaluations at `step` and after (an evaluation
 * follows its step's checkpoint). The warm start's metrics stay. A torn last line (a crash
 * mid-write) goes with the rewrite. Leftovers of interrupted writes (`*.tmp`, a checkpoint's
 * `.partial` folder) are removed.
 */
export function dropRecordsAfterStep(dir: string, step: number): void {
  const reader = new RunStoreReader(dir);
  for (const s of reader.steps()) if (s > step) fs.rmSync(path.join(dir, trajectoryFile('train', s)));
  for (const s of reader.evaluations()) if (s >= step) fs.rmSync(path.join(dir, trajectoryFile('eval', s)));
  const metricsFile = path.join(dir, 'metrics.jsonl');
  if (fs.existsSync(metricsFile)) {
    const kept = reader
      .metrics()
      .records.filter((r) => (r.kind === 'sft' ? true : r.kind === 'eval' ? r.step < step : r.step <= step));
    writeFileAtomic(metricsFile, kept.map((r) => JSON.stringify(r)).join('\n') + (kept.length ? '\n' : ''));
  }
  // Recorded tool calls follow the same rule as the trajectories they were made in.
  const cassetteFile = path.join(dir, CASSETTE_FILE);
  if (fs.existsSync(cassetteFile)) {
    const kept = reader.cassette().records.filter((e) => (e.set === 'train' ? e.step <= step : e.step < step));
    writeFileAtomic(cassetteFile, kept.map((e) => JSON.stringify(e) + '\n').join(''));
  }
  removeLeftovers(dir);
}

/** Temporary files of writes that never finished (atomic replacements, checkpoints being saved). */
function removeLeftovers(dir: string): void {
  for (const folder of [dir, path.join(dir, 'evals'), path.join(dir, 'checkpoints'), path.join(dir, 'images')]) {
    if (!fs.existsSync(folder)) continue;
    for (const name of fs.readdirSync(folder)) {
      if (/\.tmp$/.test(name) || /^(step-\d+|best)\.partial$/.test(name))
        fs.rmSync(path.join(folder, name), { recursive: true, force: true });
    }
  }
}
