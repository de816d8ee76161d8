import { z } from 'zod';
import { RunStatus, TrajectoryRecord } from './runStore';

/**
 * Which breakpoints may interrupt a step over, into or out of one trajectory: only that
 * trajectory's (the default), or any trajectory's. See BreakpointSet.duringStep.
 */
export const BreakpointsDuringStep = z.enum(['stepped-trajectory', 'all']);
export type BreakpointsDuringStep = z.infer<typeof BreakpointsDuringStep>;

/**
 * What the `rollout` debugger accepts in launch.json (mirrored, with descriptions, in
 * package.json's `contributes.debuggers[].configurationAttributes`) and the custom requests
 * its adapter answers. VS Code adds fields of its own (`__sessionId`, `__configurationTarget`,
 * …), so unknown fields pass through.
 */
export const RolloutLaunchArguments = z
  .looseObject({
    type: z.literal('rollout').optional(),
    request: z.literal('launch').optional(),
    name: z.string().optional(),
    /** Replay: a recorded run directory (`.rollout/runs/<id>`). */
    runDirectory: z.string().min(1, 'expected the path of a run directory').optional(),
    /** Live training: the training config file the trainer runs. */
    config: z.string().min(1, 'expected the path of a training config file').optional(),
    /** Live training: where the trainer runs its graphs. */
    device: z.enum(['auto', 'cpu', 'webgpu', 'cuda']).optional(),
    /** Run without stopping: no breakpoints, no pauses. */
    noDebug: z.boolean().optional(),
    /** Stop at the first turn instead of running to the first breakpoint. */
    stopOnEntry: z.boolean().optional(),
    /** Replay: begin stopped at this trajectory's first turn (Trajectories panel: Open in Debugger). */
    startAt: z
      .object({
        step: z.number().int().nonnegative(),
        /** The trajectory's `index` in its step (the "#N" of its thread and of the panel's row). */
        trajectory: z.number().int().nonnegative(),
      })
      .optional(),
    /** Replay: the branches of this re-roll (`branches/<id>.json` of the run directory) instead of the run's steps. */
    branch: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/)
      .optional(),
    /** Live training: start the trainer with the Node inspector and attach a Node debug session, so breakpoints in tool code hit. */
    debugTools: z.boolean().optional(),
    /** Which breakpoints interrupt a step (default: the stepped trajectory's only). */
    breakpointsDuringStep: BreakpointsDuringStep.optional(),
  })
  .refine((args) => args.runDirectory !== undefined || args.config !== undefined, {
    message: 'set "runDirectory" to replay a recorded run, or "config" to train',
    path: ['runDirectory'],
  })
  .refine((args) => args.startAt === undefined || args.config === undefined, {
    message: 'a live training starts at its first step; "startAt" is for replaying a recorded run ("runDirectory")',
    path: ['startAt'],
  });
export type RolloutLaunchArguments = z.infer<typeof RolloutLaunchArguments>;

/** Custom request `rolloutTranscript`: the transcript of one trajectory, as the adapter renders it. */
export const TranscriptRequestArguments = z.object({
  runDirectory: z.string(),
  step: z.number().int().nonnegative(),
  /** The trajectory's `index` in its step. */
  index: z.number().int().nonnegative(),
});
export type TranscriptRequestArguments = z.infer<typeof TranscriptRequestArguments>;

export const TranscriptResponseBody = z.object({
  text: z.string(),
  /**
   * The trajectory rendered (without its token arrays): the editor keeps the last one a live
   * session served, to show how far it got once the session has ended without its step recorded.
   */
  trajectory: TrajectoryRecord.optional(),
});
export type TranscriptResponseBody = z.infer<typeof TranscriptResponseBody>;

/** Custom request `rolloutStopPoint`: where a thread (a trajectory) stands now, for "Re-roll From Here". */
export const STOP_POINT_REQUEST = 'rolloutStopPoint';
export const StopPointArguments = z.object({ threadId: z.number().int().optional() });
export type StopPointArguments = z.infer<typeof StopPointArguments>;
export const StopPointBody = z.object({
  mode: z.enum(['live', 'replay']),
  runDirectory: z.string(),
  step: z.number().int().nonnegative(),
  /** The trajectory's `index` in its step. */
  index: z.number().int().nonnegative(),
  /** The timeline point (extension/debugger/timeline.ts): a turn index into the trajectory's turns, and a call index or −1. */
  phase: z.enum(['turn', 'call', 'result', 'end', 'update']),
  turn: z.number().int(),
  call: z.number().int(),
});
export type StopPointBody = z.infer<typeof StopPointBody>;

/**
 * Custom event: a live trainer started with `debugTools` listens with the Node inspector; the
 * extension attaches a child Node debug session to it. If that fails, it says so with the custom
 * request `rolloutToolDebuggerFailed` ({ message }), and the training is stopped (it waits for a
 * debugger before it starts).
 */
export const TOOL_DEBUGGER_EVENT = 'rolloutToolDebugger';
export const TOOL_DEBUGGER_FAILED_REQUEST = 'rolloutToolDebuggerFailed';
export const ToolDebuggerEventBody = z.object({
  address: z.string(),
  port: z.number().int().positive(),
  /** Folders the Node debugger should not step into (the trainer's own bundle). */
  skipFiles: z.array(z.string()),
});
export type ToolDebuggerEventBody = z.infer<typeof ToolDebuggerEventBody>;

/** Custom request `rolloutTraining`: what the session runs, for commands (Stop Training) and tests. */
export const TrainingStatusBody = z.object({
  mode: z.enum(['replay', 'live']),
  /** Empty while a live trainer has not created its run yet. */
  runDirectory: z.string(),
  /** Live: the trainer's process id while it runs. */
  pid: z.number().int().optional(),
  status: RunStatus.optional(),
  lastStep: z.number().int().optional(),
});
export type TrainingStatusBody = z.infer<typeof TrainingStatusBody>;

/**
 * Set (to "1") in the environment of a trainer started with the Node inspector that must wait
 * for a debugger before running anything (live training with `debugTools`); the trainer then
 * blocks in `inspector.waitForDebugger()`. See extension/trainerProcess.ts for why this and not
 * `--inspect-brk`.
 */
export const WAIT_FOR_DEBUGGER_ENV = 'ROLLOUT_STUDIO_WAIT_FOR_DEBUGGER';
