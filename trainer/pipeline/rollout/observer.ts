import type { ToolCallResult, Trajectory, TrajectoryTurn } from './trajectory';

/** A call about to run: parsed, not yet validated. */
export interface PendingCall {
  /** The assistant turn it was made in (0 = the first generated turn). */
  turn: number;
  /** Index into `trajectory.turns` of that turn. */
  turnIndex: number;
  index: number;
  name: string;
  arguments: unknown;
  /** The call exactly as the policy wrote it. */
  raw: string;
  /** Position in `ids` of the call's last token. */
  tokenEnd: number;
}

/**
 * Hooks into a rollout as it happens — for live views and for the debugger, which pauses a
 * rollout by not resolving a hook's promise (stop at a turn boundary, stop before a tool runs).
 * Every hook is awaited before the loop goes on.
 */
export interface RolloutObserver {
  /** Once per `run`, before the first turn: the batch's trajectories, which the loop then fills in place. */
  rolloutStarted?(trajectories: readonly Trajectory[]): void;
  /** After each generated turn, before its calls run. */
  turnGenerated?(trajectory: Trajectory, turn: TrajectoryTurn): void | Promise<void>;
  /** Before a parsed call runs (a call that failed to parse never runs and is not announced). */
  beforeToolCall?(trajectory: Trajectory, call: PendingCall): void | Promise<void>;
  /** After a call ran or failed, with its observation. */
  toolCallFinished?(trajectory: Trajectory, call: ToolCallResult): void | Promise<void>;
  /** When the trajectory is done, with its finish reason. */
  trajectoryFinished?(trajectory: Trajectory): void | Promise<void>;
}
