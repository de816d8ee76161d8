/**
 * A trainer's hold as the debugger shows it: the TargetView of the step at that point, and the
 * facts breakpoints match there. Live points follow the trainer's order rather than replay's
 * timeline: the calls of a round are all announced before any of them runs (they run
 * together), and a call that could not be parsed — or that names no tool or has invalid
 * arguments, which only running it finds out — shows its failure at its result.
 */
import type { LivePoint, MetricsRecord, TrajectoryRecord } from '../../../trainer/contract/protocol';
import type { TargetView } from '../rolloutTarget';
import type { StopPoint } from '../timeline';
import { pointFacts, type PointFacts } from '../breakpoints/turnContext';

export interface Hold {
  id: number;
  point: LivePoint;
  trajectories: TrajectoryRecord[];
  metrics?: MetricsRecord;
}

export const UPDATE_POINT: StopPoint = { trajectory: -1, phase: 'update', turn: -1, call: -1 };

/** The point a hold is at, in the debugger's terms. */
export function stopPointOf(hold: Hold): StopPoint {
  const { point, trajectories } = hold;
  if (point.kind === 'update') return UPDATE_POINT;
  const turns = trajectories[point.trajectory]?.turns.length ?? 0;
  return {
    trajectory: point.trajectory,
    phase: point.kind,
    turn: point.kind === 'end' ? turns : (point.turn ?? 0),
    call: point.call ?? -1,
  };
}

/** Where a trajectory of a snapshot is, from its record: ended, waiting for a call, after its calls, or after its last turn. */
export function livePosition(trajectory: TrajectoryRecord, position: number): StopPoint {
  const ended = !trajectory.inFlight || trajectory.inFlight.ended;
  if (ended) return { trajectory: position, phase: 'end', turn: trajectory.turns.length, call: -1 };
  const last = trajectory.turns[trajectory.turns.length - 1];
  if (!last) return { trajectory: position, phase: 'turn', turn: 0, call: -1 };
  const calls = last.toolCalls ?? [];
  const pending = calls.find((c) => c.pending);
  if (pending) return { trajectory: position, phase: 'call', turn: last.index, call: pending.index };
  if (calls.length)
    return { trajectory: position, phase: 'result', turn: last.index, call: calls[calls.length - 1].index };
  return { trajectory: position, phase: 'turn', turn: last.index, call: -1 };
}

export function liveView(hold: Hold): TargetView {
  const point = stopPointOf(hold);
  return {
    step: hold.point.step,
    trajectories: hold.trajectories,
    ...(hold.metrics ? { metrics: hold.metrics } : {}),
    positions: hold.trajectories.map((t, i) => (i === point.trajectory ? point : livePosition(t, i))),
    point,
  };
}

const FOUND_BY_RUNNING = new Set(['parse', 'unknown_tool', 'invalid_arguments']);

/** What breakpoints can match at a live point (see the module comment for how it differs from replay). */
export function liveFacts(
  trajectory: TrajectoryRecord | undefined,
  point: StopPoint,
  metrics: MetricsRecord | undefined,
): PointFacts {
  const facts = pointFacts(trajectory, point, metrics);
  if (point.phase !== 'result' || !trajectory) return facts;
  const call = trajectory.turns[point.turn]?.toolCalls?.find((c) => c.index === point.call);
  if (call?.error && FOUND_BY_RUNNING.has(call.error.kind)) {
    facts.exceptions.unshift(...pointFacts(trajectory, { ...point, phase: 'call' }, metrics).exceptions);
  }
  return facts;
}
