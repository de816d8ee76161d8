/** Thrown into a tool's signal when its time is up; the runner reports it as `timeout`. */
export class ToolTimeoutError extends Error {
  constructor(
    readonly toolName: string,
    readonly timeoutMs: number,
  ) {
    super(`${toolName} did not finish within ${timeoutMs} ms`);
    this.name = 'ToolTimeoutError';
  }
}

export type DeadlineOutcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Runs `work` with `controller`'s signal, which this aborts after `timeoutMs`; whoever owns the
 * controller may abort it earlier (the rollout was stopped). The outcome comes back when the
 * signal aborts even if the work ignores it: a tool that hangs must not hang the batch. (Such a
 * tool keeps running in the background; tools should honour the signal.) Work that blocks the
 * thread cannot be stopped here — the timer cannot fire — but is reported as a timeout when it
 * returns; a tool run in a worker (usercode/toolHost.ts) is stopped at its deadline.
 */
export async function withDeadline<T>(
  toolName: string,
  timeoutMs: number,
  controller: AbortController,
  work: (signal: AbortSignal) => T | Promise<T>,
): Promise<DeadlineOutcome<T>> {
  const timeout = new ToolTimeoutError(toolName, timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<DeadlineOutcome<T>>((resolve) => {
    const fail = () => resolve({ ok: false, error: controller.signal.reason });
    if (controller.signal.aborted) return fail();
    controller.signal.addEventListener('abort', fail, { once: true });
    if (Number.isFinite(timeoutMs)) timer = setTimeout(() => controller.abort(timeout), timeoutMs);
  });
  const started = performance.now();
  const run = (async (): Promise<DeadlineOutcome<T>> => {
    try {
      const value = await work(controller.signal);
      // Work that held the thread past its deadline (a synchronous loop) finishes before the timer
      // can fire: it is late all the same, and reported so — never as a success at 8 s with a 0.5 s limit.
      if (performance.now() - started > timeoutMs) {
        if (!controller.signal.aborted) controller.abort(timeout);
        return { ok: false, error: controller.signal.reason };
      }
      return { ok: true, value };
    } catch (error) {
      return { ok: false, error };
    }
  })();
  try {
    return await Promise.race([run, deadline]);
  } finally {
    clearTimeout(timer);
    // Late settlements of `run` are ignored; make sure a late rejection is not "unhandled".
    run.catch(() => {});
  }
}
