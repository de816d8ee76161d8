/**
 * Which RolloutTarget a launch configuration asks for. Replay reads a recorded run; live
 * training (a `config` to train) arrives with the trainer and plugs in here.
 */
import * as path from 'node:path';
import type { RolloutLaunchArguments } from '../../trainer/protocol/debugger';
import type { BreakpointSet } from './breakpoints';
import { RecordedRun } from './recordedRun';
import { ReplayTarget } from './replayTarget';
import type { RolloutTarget, TargetListener } from './target';

export function createTarget(args: RolloutLaunchArguments, breakpoints: BreakpointSet, listener: TargetListener): RolloutTarget {
  if (args.config !== undefined) {
    throw new Error(
      `"config": training under the debugger needs the trainer's run loop, which this build does not include yet. ` +
        `To step through a recorded run, set "runDirectory" (for example "\${workspaceFolder}/.rollout/runs/<run-id>") and leave out "config".`,
    );
  }
  const run = new RecordedRun(path.resolve(args.runDirectory!));
  run.run(); // validates run.json now, so a wrong directory fails the launch with the file and field named
  return new ReplayTarget(run, breakpoints, listener);
}
