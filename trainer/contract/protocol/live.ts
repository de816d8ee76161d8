import { z } from 'zod';
import { MetricsRecord, RunRecord, TrajectoryRecord } from './runStore';
import { PROTOCOL_VERSION } from './protocolVersion';

/**
 * The live channel of a training run launched by the extension (Node IPC). The trainer streams
 * what it also writes to the run store, and obeys control messages. Debugging works by holding:
 * with holding switched on, the trainer announces each stop point of the rollout (a turn
 * generated, a tool about to run, a tool's result, a trajectory's end, the update) and waits until
 * the extension releases it — immediately when no breakpoint matches, after the user's next
 * command when one does. The decision is the debug adapter's (the same breakpoint code replay uses).
 */

const v = { protocol: z.literal(PROTOCOL_VERSION) };

/** `download`: the model is being pulled from the Hugging Face Hub (done/total in bytes, before the run starts). */
export const TrainingPhase = z.enum(['download', 'load', 'sft', 'rollout', 'reward', 'update', 'eval', 'checkpoint']);
export type TrainingPhase = z.infer<typeof TrainingPhase>;

/** Where in the rollout a held point is. */
export const LivePoint = z.object({
  step: z.number().int().nonnegative(),
  /** The trajectory's index in the step's batch. */
  trajectory: z.number().int().nonnegative(),
  kind: z.enum(['turn', 'call', 'result', 'end', 'update']),
  /** Index into the trajectory's turns (turn, call, result). */
  turn: z.number().int().nonnegative().optional(),
  /** Index among the turn's calls (call, result). */
  call: z.number().int().nonnegative().optional(),
});
export type LivePoint = z.infer<typeof LivePoint>;

export const TrainingEvent = z.discriminatedUnion('type', [
  z.object({ ...v, type: z.literal('run.started'), runDirectory: z.string(), run: RunRecord }),
  z.object({
    ...v,
    type: z.literal('progress'),
    step: z.number().int().nonnegative(),
    phase: TrainingPhase,
    done: z.number().nonnegative(),
    total: z.number().nonnegative(),
    /** Throughput where it applies (generated tokens/s in rollout, trained tokens/s in update). */
    tokensPerSecond: z.number().nonnegative().optional(),
    /** What the phase is working on, in words (download: the repo and the file). */
    detail: z.string().optional(),
  }),
  z.object({ ...v, type: z.literal('metrics'), record: MetricsRecord }),
  /** The step's trajectories are complete in the run store. */
  z.object({ ...v, type: z.literal('step.completed'), step: z.number().int().nonnegative() }),
  z.object({ ...v, type: z.literal('run.ended'), run: RunRecord }),
  z.object({ ...v, type: z.literal('log'), level: z.enum(['info', 'warn', 'error']), message: z.string() }),
  /**
   * A stop point, held until `debug.release` with the same id arrives. The snapshot has the
   * trajectories of the step as they stand: during the rollout, records marked `inFlight`
   * (turns so far, calls not run yet marked `pending`, rewards not computed yet, per-token
   * arrays other than the mask empty); at the `update` point — after the step's update, once
   * its records are written — the step's scored records and its metrics.
   */
  z.object({
    ...v,
    type: z.literal('debug.hold'),
    id: z.number().int().nonnegative(),
    point: LivePoint,
    trajectories: z.array(TrajectoryRecord),
    metrics: MetricsRecord.optional(),
  }),
]);
export type TrainingEvent = z.infer<typeof TrainingEvent>;

export const ControlMessage = z.discriminatedUnion('type', [
  /** Pause at the next turn boundary (progress stops; the process stays). */
  z.object({ ...v, type: z.literal('pause') }),
  z.object({ ...v, type: z.literal('resume') }),
  /** Finish cleanly: stop generating, write what is complete, mark the run stopped, exit. */
  z.object({ ...v, type: z.literal('stop') }),
  /** Hold at stop points (a debug session with breakpoints or stepping) or not. */
  z.object({
    ...v,
    type: z.literal('debug.configure'),
    hold: z.boolean(),
    points: z.array(LivePoint.shape.kind).optional(),
  }),
  z.object({ ...v, type: z.literal('debug.release'), id: z.number().int().nonnegative() }),
]);
export type ControlMessage = z.infer<typeof ControlMessage>;

const TRAINING_EVENT_TYPES: ReadonlySet<string> = new Set(TrainingEvent.options.map((o) => o.shape.type.value));

/** Whether a trainer message is one of a training's events (not the environment report or a tool run's). */
export function isTrainingEvent(message: { type: string }): message is TrainingEvent {
  return TRAINING_EVENT_TYPES.has(message.type);
}
