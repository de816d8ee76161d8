import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunRecord } from '../../trainer/contract/protocol';
import { parseWith } from '../../trainer/contract/protocol/parse';
import { writeFileAtomic } from '../../trainer/contract/runstore/jsonl';

/**
 * A trainer that had to be killed (it did not stop in time) cannot mark its run: mark it
 * stopped for it, so the run is not listed as running forever. Everything else in the run
 * directory is left as the trainer wrote it — its completed steps stay complete, a step in
 * flight is at most a torn last line, which readers skip. Returns false when the run had
 * already ended (the trainer got to finish it after all) or has no run.json.
 */
export function markRunStopped(runDirectory: string): boolean {
  const file = path.join(runDirectory, 'run.json');
  if (!fs.existsSync(file)) return false;
  const run = parseWith(RunRecord, JSON.parse(fs.readFileSync(file, 'utf8')), file);
  if (run.status !== 'running') return false;
  const stopped: RunRecord = { ...run, status: 'stopped', endedAt: new Date().toISOString() };
  writeFileAtomic(file, JSON.stringify(stopped, null, 2) + '\n');
  return true;
}
