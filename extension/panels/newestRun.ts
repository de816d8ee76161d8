/**
 * The newest run, which panels that follow "the newest run" show. A run becomes the newest when
 * a training in this window starts it (whatever its creation time: a resumed run keeps its
 * own), or when the runs folder lists a running run created after the newest one — a training
 * started from a terminal. At start the newest run is the folder's newest, without telling
 * anyone: panels restored after a reload keep what they show until a run starts.
 * No vscode import, so it is tested in plain Node.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunRef } from '../../trainer/contract/protocol';

/** A run as the runs folder lists it. */
export interface ListedRun extends RunRef {
  createdAt: string;
  status: string;
}

export class NewestRun {
  private current: { ref: RunRef; createdAt: string } | undefined;
  private readonly listeners = new Set<(run: RunRef) => void>();

  /** `listed`: the runs folder now, newest first. */
  constructor(listed: readonly ListedRun[] = []) {
    this.seed(listed);
  }

  /**
   * The runs folder as first listed (newest first; the extension lists it once the workspace is
   * a Rollout Studio workspace): its newest run is the newest, told to no one — unless a run is
   * already known to be the newest.
   */
  seed(listed: readonly ListedRun[]): void {
    const newest = listed[0];
    if (newest && !this.current) this.current = { ref: refOf(newest), createdAt: newest.createdAt };
  }

  /** The newest run, if there is one. */
  get run(): RunRef | undefined {
    return this.current?.ref;
  }

  /** A training in this window started `run`: it is the newest. */
  started(run: RunRef & { createdAt: string }): void {
    this.become(refOf(run), run.createdAt);
  }

  /**
   * The runs folder was listed again (newest first): a running run created after the newest one
   * becomes the newest. A newest run that was deleted gives way to the folder's newest, quietly.
   */
  listed(runs: readonly ListedRun[]): void {
    if (this.current && !fs.existsSync(path.join(this.current.ref.dir, 'run.json'))) {
      this.current = runs[0] && { ref: refOf(runs[0]), createdAt: runs[0].createdAt };
    }
    const newer = runs.find((r) => r.status === 'running' && (!this.current || r.createdAt > this.current.createdAt));
    if (newer) this.become(refOf(newer), newer.createdAt);
  }

  /** Told of every run that becomes the newest; the returned function stops telling. */
  onChange(listener: (run: RunRef) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private become(ref: RunRef, createdAt: string): void {
    const same = this.current && path.resolve(this.current.ref.dir) === path.resolve(ref.dir);
    this.current = { ref, createdAt };
    if (same) return;
    for (const listener of [...this.listeners]) listener(ref);
  }
}

function refOf(run: RunRef): RunRef {
  return { dir: path.resolve(run.dir), id: run.id, name: run.name };
}
