/**
 * Where a rollout can stop, and in which order. Each trajectory passes through stop points —
 * a turn written (`turn`), a tool call parsed but not yet run (`call`), its result back
 * (`result`), and its end (`end`) — and a step ends with the update (`update`). A step's
 * trajectories are generated together, one round of turns at a time, so the step's timeline
 * interleaves them by turn: every trajectory's turn 2 comes before any trajectory's turn 3.
 * Replay walks this timeline; a live trainer reports the same points as it reaches them.
 */
import type { TrajectoryRecord } from '../../trainer/contract/protocol/runStore';

export type Phase = 'turn' | 'call' | 'result' | 'end' | 'update';

export interface StopPoint {
  /** Position of the trajectory in the step's list; -1 for the step's `update` point. */
  trajectory: number;
  phase: Phase;
  /** Turn index (for `end`: the number of turns; for `update`: -1). */
  turn: number;
  /** Call index within the turn, -1 when the point is not about a call. */
  call: number;
}

/** The points of one trajectory, in the order it passes them. */
export function trajectoryPoints(trajectory: TrajectoryRecord, position: number): StopPoint[] {
  const points: StopPoint[] = [];
  for (const turn of trajectory.turns) {
    points.push({ trajectory: position, phase: 'turn', turn: turn.index, call: -1 });
    for (const call of turn.toolCalls ?? []) {
      points.push({ trajectory: position, phase: 'call', turn: turn.index, call: call.index });
      points.push({ trajectory: position, phase: 'result', turn: turn.index, call: call.index });
    }
  }
  points.push({ trajectory: position, phase: 'end', turn: trajectory.turns.length, call: -1 });
  return points;
}

/**
 * A step's timeline: every trajectory's points, interleaved by turn round (stable within a
 * trajectory), then the step's update.
 */
export function stepTimeline(trajectories: readonly TrajectoryRecord[]): StopPoint[] {
  const keyed = trajectories.flatMap((t, position) =>
    trajectoryPoints(t, position).map((point, order) => ({ point, order })),
  );
  keyed.sort((a, b) => a.point.turn - b.point.turn || a.point.trajectory - b.point.trajectory || a.order - b.order);
  return [...keyed.map((k) => k.point), { trajectory: -1, phase: 'update', turn: -1, call: -1 }];
}

/** Is `point` one a `next` (or `stepBack`) stops at: a turn boundary or the trajectory's end? */
export function isTurnBoundary(point: StopPoint): boolean {
  return point.phase === 'turn' || point.phase === 'end';
}

export function describePoint(point: StopPoint): string {
  switch (point.phase) {
    case 'turn':
      return `turn ${point.turn}`;
    case 'call':
      return `turn ${point.turn}, call ${point.call} (before it runs)`;
    case 'result':
      return `turn ${point.turn}, call ${point.call} (result)`;
    case 'end':
      return 'end of the trajectory';
    case 'update':
      return 'the update after the rollouts';
  }
}
