/**
 * A re-roll's branches replayed like a recorded step: the branch set (`branches/<id>.json`) is
 * one step — the parent's — whose trajectories are the branches (#0, #1, …). Its directory is
 * `<run>/branches/<id>`, so its transcripts' `rollout:` URIs are its own and never shadow the
 * run's trajectories of the same step and index.
 */
import * as path from 'node:path';
import type { BranchSet, RunRecord } from '../../../trainer/contract/protocol';
import { readBranchSets } from '../../../trainer/contract/runstore/branchStore';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';
import type { RecordedRunSource, StepData } from './recordedRun';
import { stepTimeline } from '../timeline';

/** `<run>/branches/<id>` → the run directory and the branch set's id. */
export function branchDirectoryParts(directory: string): { runDirectory: string; id: string } | undefined {
  const match = /^(.*)[/\\]branches[/\\]([A-Za-z0-9._-]+)$/.exec(directory);
  return match ? { runDirectory: match[1], id: match[2] } : undefined;
}

export function readBranchSet(runDirectory: string, id: string): BranchSet {
  const set = readBranchSets(runDirectory).find((b) => b.id === id);
  if (!set) throw new Error(`${runDirectory} has no re-roll ${id} (branches/${id}.json)`);
  return set;
}

export class BranchRun implements RecordedRunSource {
  readonly directory: string;
  private readonly set: BranchSet;
  private readonly data: StepData;

  constructor(
    private readonly runDirectory: string,
    id: string,
  ) {
    this.set = readBranchSet(runDirectory, id);
    this.directory = path.join(runDirectory, 'branches', id);
    const trajectories = this.set.branches.map((b) => b.trajectory);
    this.data = { step: this.set.parent.step, trajectories, timeline: stepTimeline(trajectories), tornLastLine: false };
  }

  run(): RunRecord {
    const run = new RunStoreReader(this.runDirectory).run();
    return { ...run, name: `${run.name} · re-roll of #${this.set.parent.index}, step ${this.set.parent.step}` };
  }

  steps(): number[] {
    return [this.set.parent.step];
  }

  load(step: number): StepData {
    if (step !== this.set.parent.step) throw new Error(`re-roll ${this.set.id} has only step ${this.set.parent.step}`);
    return this.data;
  }
}
