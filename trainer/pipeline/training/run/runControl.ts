import type { LivePoint, TrajectoryRecord, MetricsRecord } from '../../../contract/protocol';

/**
 * How a running training is steered from outside (the extension over IPC, or Ctrl-C in a
 * terminal): pause and resume at turn boundaries, stop cleanly, and — for the debugger — hold
 * at stop points until released.
 */
export class RunControl {
  private paused = false;
  private stopRequested = false;
  private waiters: Array<() => void> = [];
  private holding = false;
  private holdKinds: ReadonlySet<LivePoint['kind']> | undefined;
  private nextHold = 0;
  private readonly held = new Map<number, () => void>();
  private readonly stopper = new AbortController();

  /** Called when a point is held: send it to the debugger (the run waits for `release`). */
  onHold:
    ((id: number, point: LivePoint, trajectories: TrajectoryRecord[], metrics?: MetricsRecord) => void) | undefined;

  get stopping(): boolean {
    return this.stopRequested;
  }

  /** Aborted by `stop`: ends a rollout in progress (its step is not recorded). */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wake();
  }

  stop(): void {
    this.stopRequested = true;
    this.paused = false;
    this.stopper.abort();
    this.wake();
    // A stop also releases every hold, so the run can wind down.
    for (const release of this.held.values()) release();
    this.held.clear();
  }

  configureHolding(hold: boolean, kinds?: readonly LivePoint['kind'][]): void {
    this.holding = hold;
    this.holdKinds = kinds ? new Set(kinds) : undefined;
    if (!hold) {
      for (const release of this.held.values()) release();
      this.held.clear();
    }
  }

  release(id: number): void {
    const release = this.held.get(id);
    this.held.delete(id);
    release?.();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Wait while paused (a turn boundary or a step boundary calls this). */
  async waitWhilePaused(): Promise<void> {
    while (this.paused && !this.stopRequested) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Hold at a stop point when a debugger asked for holding; resolves when released. */
  async point(
    point: LivePoint,
    snapshot: () => { trajectories: TrajectoryRecord[]; metrics?: MetricsRecord },
  ): Promise<void> {
    await this.waitWhilePaused();
    if (!this.holding || this.stopRequested || !this.onHold) return;
    if (this.holdKinds && !this.holdKinds.has(point.kind)) return;
    const id = this.nextHold++;
    const released = new Promise<void>((resolve) => this.held.set(id, resolve));
    const { trajectories, metrics } = snapshot();
    this.onHold(id, point, trajectories, metrics);
    await released;
  }
}
