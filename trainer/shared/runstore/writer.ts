import * as fs from 'node:fs';
import * as path from 'node:path';
import { imageFileName, MetricsRecord, RunRecord, stepFileName, trajectoryFile, TrajectoryRecord } from '../protocol/runStore';
import { parseWith } from '../protocol/parse';
import { appendJsonl, writeFileAtomic } from './jsonl';
import { RunStoreReader } from './reader';

/**
 * Writes one run directory. Every record is validated before it is written, so a reader
 * never meets a record the schemas reject; every write is flushed before the call returns.
 */
export class RunStoreWriter {
  private run: RunRecord;

  private constructor(
    readonly dir: string,
    run: RunRecord,
  ) {
    this.run = run;
  }

  /** Create `dir` (which must not hold a run yet) and write run.json. */
  static create(dir: string, run: RunRecord): RunStoreWriter {
    if (fs.existsSync(path.join(dir, 'run.json'))) throw new Error(`${dir} already holds a run; choose another run directory or resume it`);
    fs.mkdirSync(path.join(dir, 'rollouts'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'checkpoints'), { recursive: true });
    const writer = new RunStoreWriter(dir, parseWith(RunRecord, run, 'run record'));
    writer.writeRun();
    return writer;
  }

  /** Continue writing an existing run (resume): status goes back to running. */
  static reopen(dir: string, run: RunRecord): RunStoreWriter {
    const writer = new RunStoreWriter(dir, parseWith(RunRecord, { ...run, status: 'running', endedAt: undefined, error: undefined }, 'run record'));
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
    appendJsonl(path.join(this.dir, 'metrics.jsonl'), [parseWith(MetricsRecord, record, `metrics of step ${record.step}`)]);
  }

  /**
   * Write images the trajectories saw, by content hash (`images/<sha256>.<format>`; one that is
   * already there is not written again). Call it before appending the records that refer to them.
   */
  writeImages(images: readonly { sha256: string; format: 'png' | 'jpeg' | 'webp'; bytes: Uint8Array }[]): void {
    for (const image of images) {
      const file = path.join(this.dir, imageFileName(image.sha256, image.format));
      if (fs.existsSync(file)) continue;
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const partial = `${file}.${process.pid}.partial`;
      fs.writeFileSync(partial, image.bytes);
      fs.renameSync(partial, file);
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
    const checked = trajectories.map((t) => parseWith(TrajectoryRecord, t, `evaluation trajectory ${t.index} of step ${step}`));
    const file = path.join(this.dir, trajectoryFile('eval', step));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    writeFileAtomic(file, checked.map((t) => JSON.stringify(t) + '\n').join(''));
  }

  /** Mark the step complete: its records are all written. */
  completeStep(step: number, checkpoint?: string): void {
    this.update({ lastStep: step, ...(checkpoint ? { lastCheckpoint: checkpoint } : {}) });
  }

  finish(status: 'finished' | 'failed' | 'stopped', error?: RunRecord['error']): void {
    this.update({ status, endedAt: new Date().toISOString(), ...(error ? { error } : {}) });
  }

  private writeRun(): void {
    writeFileAtomic(path.join(this.dir, 'run.json'), JSON.stringify(this.run, null, 2) + '\n');
  }
}

/**
 * Drop every record of the steps after `step` — training and evaluation trajectories, and the
 * metrics of RL steps and evaluations after it (the warm start's stay): a resume from the
 * checkpoint at `step` writes them again.
 */
export function dropRecordsAfterStep(dir: string, step: number): void {
  const reader = new RunStoreReader(dir);
  for (const s of reader.steps()) if (s > step) fs.rmSync(path.join(dir, trajectoryFile('train', s)));
  for (const s of reader.evaluations()) if (s > step) fs.rmSync(path.join(dir, trajectoryFile('eval', s)));
  const metricsFile = path.join(dir, 'metrics.jsonl');
  if (fs.existsSync(metricsFile)) {
    const kept = reader.metrics().records.filter((r) => (r.kind === 'sft' ? true : r.step <= step));
    writeFileAtomic(metricsFile, kept.map((r) => JSON.stringify(r)).join('\n') + (kept.length ? '\n' : ''));
  }
}
