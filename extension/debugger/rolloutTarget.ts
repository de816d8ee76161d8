/**
 * What the debug session debugs: a rollout that moves through stop points (timeline.ts) and
 * stops when asked to or when a breakpoint fires. The session (debugSession.ts) only translates DAP
 * to this interface, so where trajectories come from is not its business:
 *
 * - replay (replayTarget.ts): a recorded run directory, walked forwards and backwards;
 * - live (liveTarget.ts): the trainer process, driven over its IPC channel — it announces each
 *   stop point it holds at, `BreakpointSet.check` decides, and `resume` / `pause` become
 *   releases and holding configurations (`debug.configure`); breakpoint changes reconfigure
 *   holding. Live training also ends by itself and reports progress.
 */
import type { MetricsRecord, RunRecord, TrajectoryRecord } from '../../trainer/contract/protocol/runStore';
import type { BreakpointStop } from './breakpoints/breakpoints';
import type { StopPoint } from './timeline';
import type { ExceptionFact } from './breakpoints/turnContext';

export type ResumeKind = 'continue' | 'next' | 'stepIn' | 'stepOut' | 'stepBack' | 'reverseContinue';

export type StopReason =
  'entry' | 'step' | 'pause' | 'breakpoint' | 'function breakpoint' | 'exception' | 'end' | 'start';

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
  metrics?: MetricsRecord | undefined;
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
  /** Live: a phase's progress (`id` names the phase of a step; `done` ends it). */
  progress?(progress: { id: string; title: string; message: string; percentage: number; done: boolean }): void;
  /** Live: the trainer recorded `step` (its trajectories are final in the run store). */
  stepRecorded?(step: number): void;
  /** Live: the trainer has exited; the session ends. */
  ended?(outcome: { exitCode: number; message: string }): void;
  /** Live with `debugTools`: the trainer's Node inspector is listening (attach a Node debugger to it). */
  inspector?(inspector: { url: string; port: number; skipFiles: string[] }): void;
}

export interface RolloutTarget {
  readonly mode: 'replay' | 'live';
  readonly supportsStepBack: boolean;
  /** Live: empty until the trainer has created its run. */
  readonly runDirectory: string;
  /** Live: undefined until the trainer has created its run. */
  run(): RunRecord | undefined;
  /** The rollout at the last stop; undefined before the first one. */
  view(): TargetView | undefined;
  /** Any trajectory of the run by step and index (for transcripts of documents still open): live, the recorded one once its step is recorded. */
  findTrajectory(step: number, index: number): TrajectoryRecord | undefined;
  /** Begin: stop at the first point, or run to the first breakpoint. */
  start(stopOnEntry: boolean): void;
  /** Move on; a `stopped` event follows. `trajectory` is the thread the user stepped. */
  resume(kind: ResumeKind, trajectory: number): void;
  /** Stop as soon as possible (a `stopped` event with reason `pause` follows). */
  pause(): void;
  readonly running: boolean;
  /** Live: the trainer's process id while it runs. */
  readonly pid?: number | undefined;
  /** Live: breakpoints changed, so holding may have to change. */
  breakpointsChanged?(): void;
  /** Live: end the training cleanly; `ended` follows once the trainer has exited. */
  terminate?(): void;
  /** Let go; live, this stops the trainer and resolves once it has exited. */
  dispose(): void | Promise<void>;
}

/** A breakpoint's stop as the session reports it. */
export function toTargetStop(stop: BreakpointStop): TargetStop {
  const { reason, description, hitBreakpointIds, exception, trajectory } = stop;
  return { reason, description, trajectory, hitBreakpointIds, ...(exception ? { exception } : {}) };
}
