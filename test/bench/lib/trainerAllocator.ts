/**
 * A benchmark that measures our trainer runs it as users get it: with the allocator settings
 * that the CLI and the extension start the trainer with (trainer/contract/allocatorEnv.ts). Like
 * the CLI, the benchmark starts itself again with them when they are missing; the peers it
 * starts get their own settings only (peerProcess.ts), not ours.
 */
import {
  currentRelaunchContext,
  endWithTheLauncher,
  relaunchWithAllocatorEnv,
  shouldRelaunch,
} from '../../../trainer/bridges/cli/relaunch';

/**
 * True in the process that should run the benchmark; false in a launcher that started it again
 * with the trainer's allocator settings and now only waits for it (the caller does nothing more).
 */
export function runsAsTheTrainer(): boolean {
  // `env` stands for any command that loads a model: the CLI relaunches those.
  if (shouldRelaunch(currentRelaunchContext('env'))) {
    relaunchWithAllocatorEnv();
    return false;
  }
  endWithTheLauncher();
  return true;
}
