import * as fs from 'node:fs';
import * as path from 'node:path';
import { MetricsRecord, RunRecord, trajectoryFile, TrajectoryRecord, type TrajectorySet } from '../protocol/runStore';
import { parseWith, ProtocolError } from '../protocol/parse';
import { CASSETTE_FILE, CassetteEntry } from '../protocol/cassetteFile';
import { readJsonl, type JsonlRead } from './jsonl';
import { duplicateMessage, metricsKey, trajectoryKey } from './recordKeys';
import { liveRunLock } from './runLock';

/**
 * Reads a run directory written by RunStoreWriter — finished, running or crashed. Used by the
 * extension (panels, replay) as well as the trainer (resume), so it needs nothing but Node.
 */
export class RunStoreReader {
  constructor(readonly dir: string) {}

  /** run.json, validated; the error names the file and field. */
  run(): RunRecord {
    const file = path.join(this.dir, 'run.json');
    if (!fs.existsSync(file))
      throw new ProtocolError(`${file}: not found — ${this.dir} is not a Rollout Studio run directory`);
    let value: unknown;
    try {
      value = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (error) {
      throw new ProtocolError(`${file}: not valid JSON (${(error as Error).message})`);
    }
    const run = parseWith(RunRecord, value, file);
    // A run still marked running whose writer is gone was killed or crashed: it is interrupted, not running.
    return run.status === 'running' && !liveRunLock(this.dir) ? { ...run, status: 'interrupted' } : run;
  }

  /** The metrics records; a step recorded twice (two writers) is an error naming both lines. */
  metrics(): JsonlRead<MetricsRecord> {
    const file = path.join(this.dir, 'metrics.jsonl');
    return refuseDuplicates(file, readJsonl(file, MetricsRecord), metricsKey);
  }

  /** Steps that have a rollouts file, ascending. */
  steps(): number[] {
    return this.stepsOf('train');
  }

  /** A step's trajectories; an index recorded twice (two writers) is an error naming both lines. */
  trajectories(step: number): JsonlRead<TrajectoryRecord> {
    const file = path.join(this.dir, trajectoryFile('train', step));
    return refuseDuplicates(file, readJsonl(file, TrajectoryRecord), trajectoryKey);
  }

  /** Steps after which an evaluation's trajectories were recorded (0: before RL), ascending. */
  evaluations(): number[] {
    return this.stepsOf('eval');
  }

  /** The trajectories of the evaluation after `step`, one per held-out row. */
  evaluationTrajectories(step: number): JsonlRead<TrajectoryRecord> {
    const file = path.join(this.dir, trajectoryFile('eval', step));
    return refuseDuplicates(file, readJsonl(file, TrajectoryRecord), trajectoryKey);
  }

  private stepsOf(set: TrajectorySet): number[] {
    const dir = path.join(this.dir, path.dirname(trajectoryFile(set, 0)));
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .map((f) => /^step-(\d{6,})\.jsonl$/.exec(f)?.[1])
      .filter((s): s is string => s !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  /** The recorded tool calls (`cassette.jsonl`; none when the run did not record its tools). */
  cassette(): JsonlRead<CassetteEntry> {
    return readJsonl(path.join(this.dir, CASSETTE_FILE), CassetteEntry);
  }

  /** Checkpoint folders (relative paths), oldest first. */
  checkpoints(): string[] {
    const dir = path.join(this.dir, 'checkpoints');
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .filter((f) => /^step-\d{6,}$/.test(f) && fs.existsSync(path.join(dir, f, 'trainer_state.json')))
      .sort()
      .map((f) => `checkpoints/${f}`);
  }
}

function refuseDuplicates<T>(file: string, read: JsonlRead<T>, key: (record: T) => string): JsonlRead<T> {
  const seen = new Map<string, number>();
  read.records.forEach((record, i) => {
    const k = key(record);
    const first = seen.get(k);
    if (first !== undefined) throw new ProtocolError(duplicateMessage(file, k, read.lines[i], first));
    seen.set(k, read.lines[i]);
  });
  return read;
}

/** The run directories under `root` (e.g. `<workspace>/.rollout/runs`), newest first, unreadable ones reported. */
export function listRuns(root: string): Array<{ dir: string; run?: RunRecord; error?: string }> {
  if (!fs.existsSync(root)) return [];
  const entries = fs
    .readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(root, d.name, 'run.json')))
    .map((d) => {
      const dir = path.join(root, d.name);
      try {
        return { dir, run: new RunStoreReader(dir).run() };
      } catch (error) {
        return { dir, error: (error as Error).message };
      }
    });
  return entries.sort((a, b) => (b.run?.createdAt ?? '').localeCompare(a.run?.createdAt ?? ''));
}
