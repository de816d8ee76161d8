/**
 * Which run a panel shows, for the Trajectories and Metrics panels alike: it follows the newest
 * run — a run that starts later takes its place — or it is pinned to its own run, stays there
 * when another starts, and says so (the webview shows "pinned", and which newer run it does not
 * show). No vscode import: the panels give it their run and how to move to another.
 */
import * as path from 'node:path';
import type { RunFollowingState, RunRef } from '../../trainer/contract/protocol';

export interface RunFollowingHost {
  /** The run the panel shows now. */
  dir(): string;
  /** Show `dir` instead; false when it cannot be shown (the reason is the host's to report). */
  showRun(dir: string): boolean;
  /** The newest run there is. */
  newest(): RunRef | undefined;
  /** Tell the webview (it shows whether the panel follows, and the newer run it does not show). */
  post(following: RunFollowingState): void;
}

export class RunFollowing {
  /** A run that started while the panel was pinned, and that it does not show. */
  private newer: RunRef | undefined;

  constructor(
    private follows: boolean,
    private readonly host: RunFollowingHost,
  ) {}

  get followsNewest(): boolean {
    return this.follows;
  }

  /** What the webview shows about following now. */
  get state(): RunFollowingState {
    return { followsNewest: this.follows, ...(this.newer ? { newer: this.newer } : {}) };
  }

  /** The webview has (re)started: tell it. */
  announce(): void {
    this.host.post(this.state);
  }

  /** A run became the newest: a following panel moves to it; a pinned one stays, and names it. */
  newestChanged(run: RunRef): void {
    if (same(run.dir, this.host.dir())) this.newer = undefined;
    else if (this.follows && this.host.showRun(run.dir)) this.newer = undefined;
    else this.newer = run;
    this.announce();
  }

  /** The user (or a command) chose: follow the newest run — showing it now — or stay on this one. */
  setFollowsNewest(follow: boolean): void {
    this.follows = follow;
    const newest = this.host.newest();
    if (follow && newest && !same(newest.dir, this.host.dir()) && !this.host.showRun(newest.dir)) this.follows = false;
    if (this.follows) this.newer = undefined;
    this.announce();
  }
}

function same(a: string, b: string): boolean {
  return path.resolve(a) === path.resolve(b);
}
