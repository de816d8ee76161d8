import * as path from 'node:path';

/**
 * A write to the run store (or a checkpoint) that the file system refused: the message names the
 * file, what was being done, and the way out. The run's earlier records and its last complete
 * checkpoint stay as they were, so `--resume` continues once the cause is fixed.
 */
export class StorageError extends Error {
  constructor(
    message: string,
    readonly file: string,
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StorageError';
  }
}

const WAY_OUT: Record<string, (where: string) => string> = {
  ENOSPC: (where) =>
    `no space left on the device holding ${where}. Free space there (or move output.runsDir to another disk); the run's complete steps and its last checkpoint are kept, and --resume continues from that checkpoint`,
  EDQUOT: (where) =>
    `the disk quota for ${where} is used up. Free space or raise the quota; the run's complete steps and its last checkpoint are kept, and --resume continues from that checkpoint`,
  EACCES: (where) =>
    `permission denied on ${where}. Make it writable for this user (ls -ld ${where}), or write runs elsewhere (output.runsDir, --run-dir)`,
  EPERM: (where) =>
    `operation not permitted on ${where}. Make it writable for this user (ls -ld ${where}), or write runs elsewhere (output.runsDir, --run-dir)`,
  EROFS: (where) => `${where} is on a read-only file system. Write runs elsewhere (output.runsDir, --run-dir)`,
  ENOTDIR: (where) =>
    `a part of ${where} is a file, not a folder. Choose a runs folder that is a folder (output.runsDir, --run-dir)`,
  EIO: (where) =>
    `the device holding ${where} reported an I/O error: check the disk. The run's earlier records are as they were`,
};

/** `error` (an fs error) as a StorageError naming `file` and the way out; anything else is returned as it is. */
export function storageError(error: unknown, file: string, doing: string): Error {
  if (error instanceof StorageError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!(error instanceof Error) || code === undefined) return error instanceof Error ? error : new Error(String(error));
  const wayOut = WAY_OUT[code];
  const text = wayOut ? wayOut(path.dirname(file)) : error.message;
  return new StorageError(`${file}: ${doing} failed (${code}): ${text}`, file, code, { cause: error });
}

/**
 * The same failure for a run that has no checkpoint yet (the disk filled while its first one was
 * saved): there is nothing `--resume` could continue from, so the advice is to start again.
 */
export function withoutResumeAdvice(error: StorageError): StorageError {
  const message = error.message
    .replace(
      /; the run's complete steps and its last checkpoint are kept, and --resume continues from that checkpoint$/,
      '; the run has no checkpoint yet, so --resume cannot continue it: start the training again once there is space',
    )
    .replace(
      / Free space, then --resume continues from the last checkpoint$/,
      ' Free space, then start the training again: the run has no checkpoint yet to resume from',
    );
  if (message === error.message) return error;
  const rewritten = new StorageError(message, error.file, error.code, { cause: error.cause });
  if (error.stack) rewritten.stack = error.stack.replace(error.message, message);
  return rewritten;
}

/** A write that the device accepted only in part, and then not at all. */
export function shortWriteError(file: string, written: number, total: number): StorageError {
  return new StorageError(
    `${file}: the device accepted only ${written} of ${total} bytes and then no more (a full disk?); the partial record was removed. Free space, then --resume continues from the last checkpoint`,
    file,
    'ENOSPC',
  );
}
