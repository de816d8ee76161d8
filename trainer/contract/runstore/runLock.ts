import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunLockRecord } from '../protocol/runStore';
import { parseWith } from '../protocol/parse';

/**
 * One writer per run directory. A trainer (or an import) creates `run.lock` with O_EXCL — of
 * two processes starting at once, exactly one succeeds — holding its process id, host and a
 * heartbeat refreshed every few seconds, and removes it when the run ends.
 *
 * A lock whose holder is gone is stale and is taken over. On the same host the holder is gone
 * when its process id no longer exists (or now belongs to a process that started later: a
 * reused id). The heartbeat decides only for a holder on another host (a shared file system):
 * there a process id means nothing, and a heartbeat older than STALE_AFTER_MS says it is gone.
 * On its own host a live trainer is never declared stale, even when it stops refreshing — it may
 * be paused in a debugger for hours.
 *
 * The lock file is written whole to a temporary name and linked into place, so a reader never
 * sees half of it.
 */

export const LOCK_FILE = 'run.lock';
/** How often the holder refreshes its heartbeat. */
export const HEARTBEAT_MS = 10_000;
/** A holder on another host whose heartbeat is older than this is taken to be gone. */
export const STALE_AFTER_MS = 120_000;

/**
 * Locks this process holds, by directory: a reader in the same process sees its own writer as
 * alive. Kept on the global object, so that every copy of this module in the process (the
 * extension's bundle and a library's, say) shares it.
 */
const HELD_KEY = Symbol.for('rollout-studio.heldRunLocks');
const heldHere: Set<string> =
  ((globalThis as Record<symbol, unknown>)[HELD_KEY] as Set<string> | undefined) ?? new Set<string>();
(globalThis as Record<symbol, unknown>)[HELD_KEY] = heldHere;

export class RunLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: RunLockRecord,
  ) {
    super(
      `${dir} is being written by another process: pid ${holder.pid} on ${holder.host}${holder.command ? ` (${holder.command})` : ''}, since ${holder.startedAt}, last seen ${holder.heartbeatAt}. ` +
        `One process writes a run at a time: wait for it to end, stop it, or train into another --run-dir. ` +
        `If that process is not a trainer, delete ${path.join(dir, LOCK_FILE)}.`,
    );
    this.name = 'RunLockedError';
  }
}

/** The holder recorded in `dir`'s lock file, if there is one (a lock file that cannot be read counts as none). */
export function readRunLock(dir: string): RunLockRecord | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8');
  } catch {
    return undefined;
  }
  try {
    return parseWith(RunLockRecord, JSON.parse(text), path.join(dir, LOCK_FILE));
  } catch {
    return undefined;
  }
}

/** Linux: a process's start time (clock ticks since boot, field 22 of /proc/<pid>/stat); undefined elsewhere. */
function processStart(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Is the process that holds (or held) this lock still there? */
export function lockHolderAlive(holder: RunLockRecord, dir?: string, now = Date.now()): boolean {
  if (holder.host !== os.hostname()) return now - Date.parse(holder.heartbeatAt) < STALE_AFTER_MS;
  if (holder.pid === process.pid) return dir !== undefined && heldHere.has(path.resolve(dir));
  if (!processExists(holder.pid)) return false;
  const started = holder.processStart === undefined ? undefined : processStart(holder.pid);
  return started === undefined || started === holder.processStart;
}

/** The live writer of `dir`, if any. */
export function liveRunLock(dir: string): RunLockRecord | undefined {
  const holder = readRunLock(dir);
  return holder && lockHolderAlive(holder, dir) ? holder : undefined;
}

function describeCommand(): string {
  const args = process.argv.slice(2).join(' ');
  return args.length > 200 ? `${args.slice(0, 200)}…` : args;
}

/** Write the lock file's content to a temporary file, then give it its name: O_EXCL (`link` fails when the name exists) or replacing. */
function writeLockFile(file: string, record: RunLockRecord, exclusive: boolean): boolean {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(record) + '\n');
  try {
    if (!exclusive) {
      fs.renameSync(tmp, file);
      return true;
    }
    try {
      fs.linkSync(tmp, file);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

/** The lock a writer holds on its run directory; `release()` when the run ends. */
export class RunDirectoryLock {
  private timer: NodeJS.Timeout | undefined;
  private released = false;

  private constructor(
    readonly dir: string,
    private record: RunLockRecord,
    heartbeatMs: number,
  ) {
    heldHere.add(path.resolve(dir));
    this.timer = setInterval(() => this.heartbeat(), heartbeatMs);
    // The heartbeat alone must not keep a process alive whose work is done.
    this.timer.unref();
  }

  /**
   * Take `dir`'s lock (the directory must exist), taking over a stale one; throws
   * RunLockedError naming the holder when a live process has it. `onTakeover` hears of a stale
   * lock that was taken over.
   */
  static acquire(
    dir: string,
    options: { heartbeatMs?: number; onTakeover?: (stale: RunLockRecord) => void } = {},
  ): RunDirectoryLock {
    const file = path.join(dir, LOCK_FILE);
    const now = new Date().toISOString();
    const start = processStart(process.pid);
    const record: RunLockRecord = {
      pid: process.pid,
      host: os.hostname(),
      ...(start ? { processStart: start } : {}),
      command: describeCommand(),
      startedAt: now,
      heartbeatAt: now,
    };
    // Two rounds at most: the first may meet a stale lock and remove it; a second failure means another process took it meanwhile.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (writeLockFile(file, record, true))
        return new RunDirectoryLock(dir, record, options.heartbeatMs ?? HEARTBEAT_MS);
      const holder = readRunLock(dir);
      if (holder && lockHolderAlive(holder, dir)) throw new RunLockedError(dir, holder);
      if (!removeStaleLock(file, holder)) continue;
      if (holder) options.onTakeover?.(holder);
    }
    const holder = readRunLock(dir);
    if (holder) throw new RunLockedError(dir, holder);
    throw new Error(`${file}: could not take the run's lock (another process keeps creating it)`);
  }

  private heartbeat(): void {
    if (this.released) return;
    this.record = { ...this.record, heartbeatAt: new Date().toISOString() };
    try {
      writeLockFile(path.join(this.dir, LOCK_FILE), this.record, false);
    } catch {
      // A missed heartbeat (a full disk, say) only matters to readers on other hosts; the run's own writes will report the disk.
    }
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    heldHere.delete(path.resolve(this.dir));
    const current = readRunLock(this.dir);
    // Never remove a lock that is not ours (it was taken over as stale, e.g. while this process was paused on another host).
    if (current && (current.pid !== this.record.pid || current.host !== this.record.host)) return;
    fs.rmSync(path.join(this.dir, LOCK_FILE), { force: true });
  }
}

/**
 * Remove a stale lock file — only if it still holds what was read as stale: between reading it
 * and removing it another process may have taken the lock over, and its fresh lock must stay.
 * Renaming first makes the check and the removal one step for the file that was checked.
 */
function removeStaleLock(file: string, stale: RunLockRecord | undefined): boolean {
  const aside = `${file}.stale-${process.pid}-${Math.random().toString(36).slice(2)}`;
  try {
    fs.renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  const moved = (() => {
    try {
      return parseWith(RunLockRecord, JSON.parse(fs.readFileSync(aside, 'utf8')), aside);
    } catch {
      return undefined;
    }
  })();
  const same =
    stale === undefined
      ? moved === undefined
      : moved !== undefined &&
        moved.pid === stale.pid &&
        moved.host === stale.host &&
        moved.startedAt === stale.startedAt;
  if (same || (moved !== undefined && !lockHolderAlive(moved))) {
    fs.rmSync(aside, { force: true });
    return true;
  }
  // It was a live holder's fresh lock: put it back, unless a third process has created one since.
  try {
    fs.linkSync(aside, file);
  } catch {
    // A newer lock exists; the live holder whose file this was will find its lock replaced — rare enough to leave.
  }
  fs.rmSync(aside, { force: true });
  return false;
}
