import * as os from 'node:os';
import type { RunStoreWriter } from '../../../contract/runstore/writer';
import { definedFields } from '../../../contract/definedFields';

/**
 * A run whose process ends while it is still `running` — `process.exit` called by a tool kept on
 * the trainer's thread, an exception thrown where nothing catches it, a second Ctrl-C or SIGTERM
 * — is marked `failed` with the reason, its lock released, and the exit code made non-zero (an
 * exit 0 would tell a script the training succeeded). Everything here is synchronous: it runs in
 * the process's 'exit' event, where nothing asynchronous happens any more.
 */

/** Why the process is ending, when whoever ends it knows (trainCommand's second signal). */
let announced: string | undefined;

/**
 * End the process now because of `signal` (a second stop signal), recording `reason` on a run
 * still in progress. The 'exit' listeners record the run; then the signal is raised again with
 * its default action, as a shell expects of a program a signal ended (exit status 128 + its
 * number). Not process.exit: that tears down the device's worker thread mid-run, and
 * onnxruntime's native completion callback then aborts the process ("terminate called after
 * throwing an instance of 'Napi::Error'"), replacing the status with SIGABRT's. Where a signal
 * cannot be raised again (Windows), the process exits with the code after a moment.
 */
export function exitBySignal(signal: NodeJS.Signals, reason: string): void {
  announced = reason;
  const code = 128 + (os.constants.signals[signal] ?? 0);
  process.exitCode = code;
  process.emit('exit', code);
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  setTimeout(() => (process as unknown as { reallyExit(code: number): never }).reallyExit(code), 1_000).unref();
}

/** The first stack frame outside this file and Node's own: who called `process.exit`. */
function caller(stack: string | undefined): string | undefined {
  return stack
    ?.split('\n')
    .slice(1)
    .map((line) => line.trim())
    .find(
      (line) =>
        line.startsWith('at ') &&
        !line.includes('unexpectedExit') &&
        !line.includes('node:internal') &&
        !/\(node:/.test(line),
    );
}

/** Watch the process for as long as `writer`'s run is in progress; `dispose` when the run ends as it should. */
export function markRunOnUnexpectedExit(writer: RunStoreWriter): { dispose(): void } {
  let reason: string | undefined;
  const originalExit = process.exit;
  const watchedExit = ((code?: number | string | null) => {
    if (announced === undefined && reason === undefined) {
      const where = caller(new Error().stack);
      reason = `process.exit(${code ?? ''}) was called while the run was in progress${where ? `, ${where}` : ''} (a tool with isolation: 'trainer', a reward or a config must not end the process)`;
    }
    return originalExit.call(process, code as number);
  }) as typeof process.exit;
  const onUncaught = (error: Error) => {
    reason ??= `an exception nothing caught ended the process: ${error?.stack ?? String(error)}`;
  };
  const onExit = (code: number) => {
    if (writer.record.status !== 'running') return;
    const message = announced ?? reason ?? `the process exited (code ${code}) while the run was in progress`;
    try {
      writer.finish('failed', definedFields({ message, step: writer.record.lastStep }));
    } catch {
      // The disk that cannot take the record: the lock goes with the process, and readers show the run interrupted.
    }
    process.stderr.write(`rollout-studio: the run failed: ${message}\n`);
    if (!code) process.exitCode = 1;
  };
  process.exit = watchedExit;
  process.on('uncaughtExceptionMonitor', onUncaught);
  process.on('exit', onExit);
  return {
    dispose: () => {
      if (process.exit === watchedExit) process.exit = originalExit;
      process.off('uncaughtExceptionMonitor', onUncaught);
      process.off('exit', onExit);
    },
  };
}
