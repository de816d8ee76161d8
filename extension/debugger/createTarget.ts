/**
 * Which RolloutTarget a launch configuration asks for: `runDirectory` replays a recorded run,
 * `config` trains live.
 */
import * as path from 'node:path';
import type { RolloutLaunchArguments } from '../../trainer/contract/protocol/debugger';
import type { LiveTrainings } from '../live/liveTrainings';
import type { TrainerLaunch } from '../trainerProcess';
import type { BreakpointSet } from './breakpoints/breakpoints';
import { LiveTarget } from './live/liveTarget';
import { RecordedRun } from './replay/recordedRun';
import { BranchRun } from './replay/branchRun';
import { ReplayTarget } from './replay/replayTarget';
import type { RolloutTarget, TargetListener } from './rolloutTarget';

/** What live training needs from whoever hosts the adapter. */
export interface LiveTrainingHost {
  /** How to start the trainer. */
  launch: TrainerLaunch;
  /** Where live trainings are published (the panels follow them). */
  trainings?: LiveTrainings;
  stopTimeoutMs?: number;
  /** The host attaches a Node debugger to the trainer when the session asks (VS Code: toolDebugger.ts), so `debugTools` waits for it. */
  toolDebugger?: boolean;
  /**
   * Why training `config` may not start here (an untrusted workspace: extension/workspaceTrust.ts),
   * asked before the launch so the debug console says so; replay is unaffected. The trainer's
   * spawn refuses again on its own (extension/workspaceCode.ts).
   */
  refusal?: (config: string) => string | undefined;
}

export interface TargetContext {
  breakpoints: BreakpointSet;
  listener: TargetListener;
  live?: LiveTrainingHost | undefined;
}

export function createTarget(args: RolloutLaunchArguments, context: TargetContext): RolloutTarget {
  const { breakpoints, listener } = context;
  if (args.config !== undefined) {
    if (args.runDirectory !== undefined)
      throw new Error('set either "config" (train live) or "runDirectory" (replay a recorded run), not both');
    if (!context.live)
      throw new Error(
        '"config": this debug adapter was started without a trainer to run (live training needs the extension, or a TrainerLaunch in tests)',
      );
    const refusal = context.live.refusal?.(path.resolve(args.config));
    if (refusal !== undefined) throw new Error(refusal);
    return new LiveTarget(
      {
        config: path.resolve(args.config),
        ...(args.device ? { device: args.device } : {}),
        noDebug: args.noDebug ?? false,
        debugTools: args.debugTools ?? false,
        childSessions: context.live.toolDebugger ?? false,
        launch: context.live.launch,
        ...(context.live.trainings ? { trainings: context.live.trainings } : {}),
        ...(context.live.stopTimeoutMs ? { stopTimeoutMs: context.live.stopTimeoutMs } : {}),
      },
      breakpoints,
      listener,
    );
  }
  const run =
    args.branch !== undefined
      ? new BranchRun(path.resolve(args.runDirectory!), args.branch)
      : new RecordedRun(path.resolve(args.runDirectory!));
  run.run(); // validates run.json now, so a wrong directory fails the launch with the file and field named
  return new ReplayTarget(run, breakpoints, listener, args.startAt);
}
