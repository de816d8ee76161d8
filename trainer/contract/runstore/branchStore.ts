import * as fs from 'node:fs';
import * as path from 'node:path';
import { branchFile, BranchSet } from '../protocol/branches';
import { parseWith, ProtocolError } from '../protocol/parse';
import type { TrajectorySet } from '../protocol/runStore';
import { writeFileAtomic } from './jsonl';

/**
 * Re-rolls kept in a run directory (`branches/<id>.json`, one file per re-roll, written whole).
 * They live beside the run's records and are never read as training data.
 */
export function writeBranchSet(runDir: string, set: BranchSet): string {
  const checked = parseWith(BranchSet, set, `branch set ${set.id}`);
  const file = path.join(runDir, branchFile(checked.id));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileAtomic(file, JSON.stringify(checked) + '\n');
  return file;
}

/** Every re-roll of the run, oldest first; an unreadable file is an error naming it. */
export function readBranchSets(runDir: string): BranchSet[] {
  const dir = path.join(runDir, 'branches');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => {
      const file = path.join(dir, f);
      let value: unknown;
      try {
        value = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (error) {
        throw new ProtocolError(`${file}: not valid JSON (${(error as Error).message})`);
      }
      return parseWith(BranchSet, value, file);
    })
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
}

/** The re-rolls of one trajectory. */
export function branchesOf(runDir: string, parent: { set: TrajectorySet; step: number; index: number }): BranchSet[] {
  return readBranchSets(runDir).filter(
    (b) => b.parent.set === parent.set && b.parent.step === parent.step && b.parent.index === parent.index,
  );
}
