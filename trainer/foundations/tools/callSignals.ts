/**
 * The abort controllers of one round of tool calls, all tied to the rollout's stop signal by a
 * single listener. Each call needs a controller of its own (its timeout aborts that call alone);
 * tying each one to the stop signal with a listener of its own put one listener per call in
 * flight on that signal, and from the eleventh Node printed `MaxListenersExceededWarning:
 * Possible EventTarget memory leak detected. 11 abort listeners` — on every run whose tools had
 * 11 or more calls running at once (a tool's default concurrency is 16).
 */
export class CallSignals {
  private readonly live = new Set<AbortController>();
  private readonly onStop = () => {
    for (const controller of this.live) controller.abort(this.stop!.reason);
    this.live.clear();
  };

  constructor(private readonly stop: AbortSignal | undefined) {
    stop?.addEventListener('abort', this.onStop, { once: true });
  }

  /** A controller for one call: already aborted when the rollout has been stopped. Release it when the call is over. */
  open(): AbortController {
    const controller = new AbortController();
    if (this.stop?.aborted) controller.abort(this.stop.reason);
    else this.live.add(controller);
    return controller;
  }

  release(controller: AbortController): void {
    this.live.delete(controller);
  }

  /** The round is over: let go of the stop signal. */
  close(): void {
    this.stop?.removeEventListener('abort', this.onStop);
    this.live.clear();
  }
}
