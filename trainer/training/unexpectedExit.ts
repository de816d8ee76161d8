import type { RunStoreWriter } from '../shared/runstore/writer';

/**
 * A run whose process ends while it is still `running` — `process.exit` called by a tool kept on
 * the trainer's thread, an exception thrown where nothing catches it, a second Ctrl-C or SIGTERM
 * — is marked `failed` with the reason, its lock released, and the exit code made non-zero (an
 * exit 0 would tell a script the training succeeded). Everything here is synchronous: it runs in
 * the process's 'exit' event, where nothing asynchronous happens any more.
 */

/** Why the process is ending, when whoever ends it knows (trainCommand's second signal). */
let announced: string | undefined;

/** End the process now with `code`, recording `reason` on a run still in progress. */
export function exitNow(code: number, reason: string): never {
  announced = reason;
  // The 'exit' listeners record the run; then the process ends without tearing down its worker
  // threads: process.exit stops the device's worker mid-run, and onnxruntime's native callback
  // then aborts the process ("terminate called after throwing an instance of 'Napi::Error'"),
  // which replaced the exit code with SIGABRT.
  process.exitCode = code;
  process.emit('exit', code);
  return (process as unknown as { reallyExit(code: number): never }).reallyExit(code);
}

/** The first stack frame outside this file and Node's own: who called `process.exit`. */
function caller(stack: string | undefined): string | undefined {
  return stack
    ?.split('\n')
    .slice(1)
    .map((line) => line.trim())
    .find((line) => line.startsWith('at ') && !line.includes('unexpectedExit') && !line.includes('node:internal') && !/\(node:/.test(line));
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
      writer.finish('failed', { message, ...(writer.record.lastStep !== undefined ? { step: writer.record.lastStep } : {}) });
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
