import * as path from 'node:path';
import type { RunSource } from './runSource';

export interface RunSourceLease {
  source: RunSource;
  release(): void;
}

/**
 * One source per run, shared by every panel and the status bar that show it, and disposed
 * when the last of them lets go. The factory decides where a run's data comes from: the run
 * directory today; a live trainer's messages, for the run it is writing, once training runs
 * inside the editor.
 */
export class RunSources {
  private readonly entries = new Map<string, { source: RunSource; users: number }>();

  constructor(private readonly create: (dir: string) => RunSource) {}

  /** Throws when the directory is not a readable run (the error names the file and field). */
  acquire(dir: string): RunSourceLease {
    const key = path.resolve(dir);
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { source: this.create(key), users: 0 };
      this.entries.set(key, entry);
    }
    entry.users++;
    const held = entry;
    let released = false;
    return {
      source: held.source,
      release: () => {
        if (released) return;
        released = true;
        if (--held.users === 0) {
          this.entries.delete(key);
          held.source.dispose();
        }
      },
    };
  }

  /** Sources in use now (for tests and diagnostics). */
  get size(): number {
    return this.entries.size;
  }

  dispose(): void {
    for (const { source } of this.entries.values()) source.dispose();
    this.entries.clear();
  }
}
