/**
 * Replay: a recorded run walked like a live one. One cursor moves along the run's timeline
 * (steps in order, each step's trajectories interleaved by turn, see timeline.ts); every
 * trajectory's position follows from it, so all threads stop together. Stepping a thread
 * moves the cursor to that thread's next point and lets the others run along, as a live
 * batch would; which breakpoints can interrupt a step is BreakpointSet's decision
 * (`breakpointsDuringStep`), the same as live. `continue` and
 * `reverseContinue` check every breakpoint at every point, across steps, and stop at the end
 * (or start) of the run so the user can turn around there.
 */
import type { BreakpointSet, SteppingTrajectory } from '../breakpoints/breakpoints';
import type { RecordedRunSource, StepData } from './recordedRun';
import {
  toTargetStop,
  type ResumeKind,
  type RolloutTarget,
  type StopReason,
  type TargetListener,
  type TargetStop,
  type TargetView,
} from '../rolloutTarget';
import type { TrajectoryRecord } from '../../../trainer/contract/protocol/runStore';
import { describePoint, isTurnBoundary, type StopPoint } from '../timeline';
import { pointFacts } from '../breakpoints/turnContext';

interface Cursor {
  /** Index into the run's step list. */
  ordinal: number;
  /** Index into that step's timeline. */
  index: number;
}

/** A trajectory to begin the replay at: its step and its `index` in that step. */
export interface ReplayStart {
  step: number;
  trajectory: number;
}

/** What a walk does at each point: stop there (a TargetStop), or go on (undefined). */
type Visitor = (data: StepData, index: number) => TargetStop | undefined;

export class ReplayTarget implements RolloutTarget {
  readonly mode = 'replay';
  readonly supportsStepBack = true;
  private steps: number[];
  private cursor?: Cursor;
  private busy = false;
  private pauseRequested = false;
  private disposed = false;
  /** With `startAt`: where the replay begins (checked when the target is made). */
  private readonly entry?: Cursor;

  constructor(
    private readonly source: RecordedRunSource,
    private readonly breakpoints: BreakpointSet,
    private readonly listener: TargetListener,
    private readonly startAt?: ReplayStart,
  ) {
    this.steps = source.steps();
    if (this.steps.length === 0)
      throw new Error(`${source.directory} has no recorded steps yet: rollouts/ holds no step-NNNNNN.jsonl file`);
    if (startAt) this.entry = this.startCursor(startAt); // a step or trajectory that is not there fails the launch, named
  }

  get runDirectory(): string {
    return this.source.directory;
  }

  get running(): boolean {
    return this.busy;
  }

  run() {
    return this.source.run();
  }

  view(): TargetView | undefined {
    return this.cursor && this.viewAt(this.cursor);
  }

  findTrajectory(step: number, index: number) {
    if (!this.source.steps().includes(step)) return undefined;
    return this.source.load(step).trajectories.find((t) => t.index === index);
  }

  start(stopOnEntry: boolean): void {
    const { startAt: at, entry } = this;
    if (at && entry) {
      // Asked for one trajectory (Open in Debugger): stop at its first turn, its thread the one shown.
      this.execute(async () => {
        this.moveTo(entry);
        const position = this.source.load(at.step).timeline[entry.index].trajectory;
        return this.stopAt('entry', position, `Paused at the first turn of #${at.trajectory}, step ${at.step}`);
      });
    } else if (stopOnEntry) {
      this.execute(async () => {
        this.moveTo({ ordinal: 0, index: 0 });
        return this.stopAt('entry', 0, `Paused at the first turn of step ${this.steps[0]}`);
      });
    } else {
      this.execute(() =>
        this.walkForward({ ordinal: 0, index: -1 }, (data, index) => this.checkBreakpoints(data, index)),
      );
    }
  }

  resume(kind: ResumeKind, trajectory: number): void {
    const cursor = this.cursor ?? { ordinal: 0, index: 0 };
    const data = this.source.load(this.steps[cursor.ordinal]);
    const shown = shownIndices(data.timeline, cursor.index, data.trajectories.length)[trajectory] ?? cursor.index;
    const atEnd = data.timeline[shown]?.phase === 'end';
    switch (kind) {
      case 'continue':
        return this.execute(() => this.walkForward(cursor, (d, i) => this.checkBreakpoints(d, i)));
      case 'reverseContinue':
        return this.execute(() => this.walkBackward(cursor, (d, i) => this.checkBreakpoints(d, i)));
      case 'next':
      case 'stepIn':
      case 'stepOut': {
        // At a trajectory's end, `stepOut` has nowhere further out to go: it steps on like `next`.
        const target =
          kind === 'stepIn'
            ? () => true
            : kind === 'stepOut' && !atEnd
              ? (p: StopPoint) => p.phase === 'end'
              : isTurnBoundary;
        return this.execute(() =>
          this.walkForward(
            { ordinal: cursor.ordinal, index: Math.max(cursor.index, shown) },
            this.stepVisitor(trajectory, target),
          ),
        );
      }
      case 'stepBack':
        return this.execute(() =>
          this.walkBackward(
            { ordinal: cursor.ordinal, index: Math.min(cursor.index, shown) },
            this.stepVisitor(trajectory, isTurnBoundary),
          ),
        );
    }
  }

  pause(): void {
    if (this.busy) this.pauseRequested = true;
  }

  dispose(): void {
    this.disposed = true;
    this.pauseRequested = true;
  }

  /** The cursor at the first point of trajectory `index` of `step`; throws naming what is not recorded. */
  private startCursor({ step, trajectory }: ReplayStart): Cursor {
    const ordinal = this.steps.indexOf(step);
    if (ordinal < 0) {
      const range =
        this.steps.length === 1 ? `${this.steps[0]}` : `${this.steps[0]}–${this.steps[this.steps.length - 1]}`;
      throw new Error(
        `startAt.step: step ${step} is not recorded in ${this.source.directory} (recorded steps: ${range})`,
      );
    }
    const data = this.source.load(step);
    const position = data.trajectories.findIndex((t) => t.index === trajectory);
    if (position < 0) {
      const indices = data.trajectories.map((t) => `#${t.index}`).join(', ');
      throw new Error(
        `startAt.trajectory: step ${step} has no trajectory #${trajectory} (it has ${indices || 'none'})`,
      );
    }
    return { ordinal, index: data.timeline.findIndex((point) => point.trajectory === position) };
  }

  /**
   * Stop at `trajectory`'s next point matching `isTarget`; breakpoints may stop it first — its
   * own, and the other trajectories' too when `breakpointsDuringStep` is `all` (BreakpointSet decides).
   */
  private stepVisitor(trajectory: number, isTarget: (point: StopPoint) => boolean): Visitor {
    return (data, index) => {
      if (trajectory >= data.trajectories.length)
        return this.stopAt('step', 0, `Step ${data.step} has no trajectory #${trajectory}`);
      const point = data.timeline[index];
      if (point.trajectory === trajectory && isTarget(point))
        return this.stopAt(
          'step',
          trajectory,
          `Step ${data.step}, #${data.trajectories[trajectory].index}: ${describePoint(point)}`,
        );
      return this.checkBreakpoints(data, index, { trajectory });
    };
  }

  private checkBreakpoints(data: StepData, index: number, stepping?: SteppingTrajectory): TargetStop | undefined {
    const point = data.timeline[index];
    const reached = {
      step: data.step,
      trajectories: data.trajectories,
      point,
      metrics: data.metrics,
      facts: (trajectory: TrajectoryRecord | undefined) => pointFacts(trajectory, point, data.metrics),
    };
    const stop = this.breakpoints.stopAt(reached, (text, category) => this.listener.output(text, category), stepping);
    return stop && toTargetStop(stop);
  }

  private async walkForward(from: Cursor, visit: Visitor): Promise<TargetStop> {
    let { ordinal, index } = from;
    index++;
    for (;;) {
      const data = this.source.load(this.steps[ordinal]);
      for (; index < data.timeline.length; index++) {
        const stop = visit(data, index);
        if (stop) return (this.moveTo({ ordinal, index }), stop);
      }
      // A run that is still being written may have grown since the replay began.
      if (ordinal + 1 >= this.steps.length) this.steps = this.source.steps();
      if (ordinal + 1 >= this.steps.length) {
        this.moveTo({ ordinal, index: data.timeline.length - 1 });
        const status = this.source.run().status;
        return this.stopAt(
          'end',
          0,
          `End of the run (step ${data.step}, ${status}): step back or reverse-continue to go back`,
        );
      }
      ordinal++;
      index = 0;
      if (await this.interrupted())
        return (
          this.moveTo({ ordinal, index }),
          this.stopAt('pause', 0, `Paused at the start of step ${this.steps[ordinal]}`)
        );
    }
  }

  private async walkBackward(from: Cursor, visit: Visitor): Promise<TargetStop> {
    let { ordinal, index } = from;
    index--;
    for (;;) {
      const data = this.source.load(this.steps[ordinal]);
      if (index >= data.timeline.length) index = data.timeline.length - 1;
      for (; index >= 0; index--) {
        const stop = visit(data, index);
        if (stop) return (this.moveTo({ ordinal, index }), stop);
      }
      if (ordinal === 0) {
        this.moveTo({ ordinal: 0, index: 0 });
        return this.stopAt('start', 0, `Start of the run (step ${data.step}): continue or step to go forward`);
      }
      ordinal--;
      index = Number.MAX_SAFE_INTEGER;
      if (await this.interrupted()) {
        const last = this.source.load(this.steps[ordinal]).timeline.length - 1;
        return (
          this.moveTo({ ordinal, index: last }),
          this.stopAt('pause', 0, `Paused at the end of step ${this.steps[ordinal]}`)
        );
      }
    }
  }

  /** Let requests in between steps (pause, disconnect); true when they asked to stop. */
  private async interrupted(): Promise<boolean> {
    await new Promise((resolve) => setImmediate(resolve));
    return this.pauseRequested;
  }

  private execute(walk: () => Promise<TargetStop>): void {
    if (this.busy) {
      this.listener.output('The replay is already moving; pause it first.', 'stderr');
      return;
    }
    this.busy = true;
    this.pauseRequested = false;
    walk().then(
      (stop) => {
        this.busy = false;
        if (!this.disposed) this.listener.stopped(stop);
      },
      (error: Error) => {
        this.busy = false;
        if (this.disposed) return;
        // A step file that does not validate stops the replay where it was, saying which file and line.
        this.listener.output(`Replay cannot go on: ${error.message}`, 'stderr');
        this.listener.stopped({ reason: 'pause', description: `Replay cannot go on: ${error.message}`, trajectory: 0 });
      },
    );
  }

  private stopAt(reason: StopReason, trajectory: number, description: string): TargetStop {
    return { reason, trajectory, description };
  }

  private moveTo(cursor: Cursor): void {
    const previous = this.cursor && this.viewAt(this.cursor);
    this.cursor = cursor;
    const next = this.viewAt(cursor);
    if (!previous || previous.step !== next.step) {
      const data = this.source.load(next.step);
      if (data.tornLastLine)
        this.listener.output(
          `Step ${next.step}: the last trajectory was cut short by a crash and is left out.`,
          'important',
        );
      this.listener.stepChanged(previous, next);
    }
  }

  private viewAt(cursor: Cursor): TargetView {
    const data = this.source.load(this.steps[cursor.ordinal]);
    const shown = shownIndices(data.timeline, cursor.index, data.trajectories.length);
    return {
      step: data.step,
      trajectories: data.trajectories,
      metrics: data.metrics,
      positions: shown.map((i) => data.timeline[i]),
      point: data.timeline[cursor.index],
    };
  }
}

/**
 * For each trajectory, the timeline index of the point it shows with the cursor at `cursor`:
 * its last point at or before the cursor, or its first point when it has not started yet.
 */
export function shownIndices(timeline: readonly StopPoint[], cursor: number, trajectories: number): number[] {
  const shown = new Array<number>(trajectories).fill(-1);
  const first = new Array<number>(trajectories).fill(-1);
  for (let i = 0; i < timeline.length; i++) {
    const t = timeline[i].trajectory;
    if (t < 0) continue;
    if (first[t] < 0) first[t] = i;
    if (i <= cursor) shown[t] = i;
  }
  return shown.map((i, t) => (i >= 0 ? i : first[t]));
}
