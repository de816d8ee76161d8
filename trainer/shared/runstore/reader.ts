import * as fs from 'node:fs';
import * as path from 'node:path';
import { MetricsRecord, RunRecord, stepFileName, TrajectoryRecord } from '../protocol/runStore';
import { parseWith, ProtocolError } from '../protocol/parse';
import { readJsonl } from './jsonl';

/**
 * Reads a run directory written by RunStoreWriter — finished, running or crashed. Used by the
 * extension (panels, replay) as well as the trainer (resume), so it needs nothing but Node.
 */
export class RunStoreReader {
  constructor(readonly dir: string) {}

  /** run.json, validated; the error names the file and field. */
  run(): RunRecord {
    const file = path.join(this.dir, 'run.json');
    if (!fs.existsSync(file)) throw new ProtocolError(`${file}: not found — ${this.dir} is not a Rollout Studio run directory`);
    let value: unknown;
    try {
      value = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (error) {
      throw new ProtocolError(`${file}: not valid JSON (${(error as Error).message})`);
    }
    return parseWith(RunRecord, value, file);
  }

  metrics(): { records: MetricsRecord[]; tornLastLine: boolean } {
    return readJsonl(path.join(this.dir, 'metrics.jsonl'), MetricsRecord);
  }

  /** Steps that have a rollouts file, ascending. */
  steps(): number[] {
    const dir = path.join(this.dir, 'rollouts');
    if (!fs.existsSync(dir)) return [];
    return fs
      .readdirSync(dir)
      .map((f) => /^step-(\d{6,})\.jsonl$/.exec(f)?.[1])
      .filter((s): s is string => s !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  trajectories(step: number): { records: TrajectoryRecord[]; tornLastLine: boolean } {
    return readJsonl(path.join(this.dir, 'rollouts', `${stepFileName(step)}.jsonl`), TrajectoryRecord);
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
