/**
 * What the debug session debugs: a rollout that moves through stop points (timeline.ts) and
 * stops when asked to or when a breakpoint fires. The session (session.ts) only translates DAP
 * to this interface, so where trajectories come from is not its business:
 *
 * - replay (replayTarget.ts): a recorded run directory, walked forwards and backwards;
 * - live (to come with the trainer): the trainer process, driven over its IPC channel with
 *   control messages — `resume(kind)` becomes continue/step messages, `pause()` a pause
 *   request honoured at the next turn boundary, breakpoint changes are sent along, and the
 *   trainer reports each stop point it holds at so `BreakpointSet.check` can decide.
 */
import type { MetricsRecord, RunRecord, TrajectoryRecord } from '../../trainer/protocol/runStore';
import type { StopPoint } from './timeline';
import type { ExceptionFact } from './turnContext';

export type ResumeKind = 'continue' | 'next' | 'stepIn' | 'stepOut' | 'stepBack' | 'reverseContinue';

export type StopReason = 'entry' | 'step' | 'pause' | 'breakpoint' | 'function breakpoint' | 'exception' | 'end' | 'start';

export interface TargetStop {
  reason: StopReason;
  /** Shown by VS Code next to the paused thread, e.g. "Paused before search({…})". */
  description: string;
  /** The trajectory (position in the step's list) to focus. */
  trajectory: number;
  hitBreakpointIds?: number[];
  exception?: ExceptionFact;
}

/** The rollout as it stands at a stop. */
export interface TargetView {
  step: number;
  trajectories: readonly TrajectoryRecord[];
  metrics?: MetricsRecord;
  /** Where each trajectory is, indexed like `trajectories`. */
  positions: readonly StopPoint[];
  /** The point the whole rollout is at (one trajectory's, or the step's update). */
  point: StopPoint;
}

export interface TargetListener {
  stopped(stop: TargetStop): void;
  /** Logpoint messages, condition errors and notes for the debug console. */
  output(text: string, category: 'console' | 'stderr' | 'important'): void;
  /** The step in flight changed: its trajectories (threads) were replaced. */
  stepChanged(previous: TargetView | undefined, next: TargetView): void;
}

export interface RolloutTarget {
  readonly mode: 'replay' | 'live';
  readonly supportsStepBack: boolean;
  readonly runDirectory: string;
  run(): RunRecord;
  /** The rollout at the last stop; undefined before the first one. */
  view(): TargetView | undefined;
  /** Any trajectory of the run by step and index (for transcripts of documents still open). */
  findTrajectory(step: number, index: number): TrajectoryRecord | undefined;
  /** Begin: stop at the first point, or run to the first breakpoint. */
  start(stopOnEntry: boolean): void;
  /** Move on; a `stopped` event follows. `trajectory` is the thread the user stepped. */
  resume(kind: ResumeKind, trajectory: number): void;
  /** Stop as soon as possible (a `stopped` event with reason `pause` follows). */
  pause(): void;
  readonly running: boolean;
  dispose(): void;
}
