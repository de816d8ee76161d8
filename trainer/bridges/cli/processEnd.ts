/**
 * How the CLI process ends. Every command closes what it opened (the device's worker thread, MCP
 * servers, files, servers); when its promise settles, nothing should keep the process alive. If
 * something still does — a handle a library left open, a bug of ours — the process must end all
 * the same, or a terminal (and the editor's Start Training, which waits for the exit) hangs
 * after the message was printed. So a settled command gets a few seconds, then the process ends
 * with its exit code, naming what was still open so the leak can be found.
 */

/** How long a finished command may take to let the process exit by itself. */
export const EXIT_GRACE_MS = 5_000;

/** What keeps the process alive, e.g. "MessagePort, PipeWrap ×2" (timers that do not hold it open left out). */
function openResources(): string {
  const counts = new Map<string, number>();
  for (const name of process.getActiveResourcesInfo())
    if (name !== 'Timeout' && name !== 'Immediate') counts.set(name, (counts.get(name) ?? 0) + 1);
  return [...counts].map(([name, n]) => (n > 1 ? `${name} ×${n}` : name)).join(', ') || 'nothing visible';
}

/** After the command settled: end the process within the grace period, whatever is still open. */
export function endProcessSoon(graceMs = EXIT_GRACE_MS): void {
  const timer = setTimeout(() => {
    process.stderr.write(
      `rollout-studio: the command ended ${graceMs / 1000} s ago but the process was kept open (${openResources()}); exiting\n`,
    );
    process.exit();
  }, graceMs);
  // Only a process that would not end by itself meets this timer.
  timer.unref();
}

/**
 * A reader of our output that went away (`rollout-studio train … | head -2`) makes the next
 * write fail with EPIPE, which would crash the process mid-run. Instead the output is dropped
 * from then on and `onClosed` decides what happens: the training stops cleanly (its run marked
 * stopped), as after Ctrl-C; other commands end.
 */
export function whenOutputCloses(onClosed: () => void): void {
  let closed = false;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED') throw error;
      if (closed) return;
      closed = true;
      onClosed();
    });
  }
}

/** Errors whose message says everything (the file, field or row, and what to do): no stack trace under them. */
const SELF_EXPLANATORY = new Set([
  'BlobIntegrityError',
  'BudgetError',
  'ChatTemplateError',
  'CheckpointError',
  'ConfigError',
  'DatasetError',
  'DemonstrationError',
  'HubError',
  'McpServerError',
  'ModelConfigError',
  'ProviderUnavailableError',
  'ResumeError',
  'RewardError',
  'RunLockedError',
  'ServeConfigError',
  'StorageError',
  'TokenizerError',
  'UserCodeError',
  'VerlImportError',
]);

/** The line(s) printed for an error that ends a command; `verbose` (--verbose) keeps the stack trace of every one. */
export function describeFailure(error: unknown, verbose = false): string {
  if (!(error instanceof Error)) return String(error);
  if (verbose) return error.stack ?? `${error.name}: ${error.message}`;
  if (SELF_EXPLANATORY.has(error.name)) return error.message;
  return error.stack ?? `${error.name}: ${error.message}`;
}
