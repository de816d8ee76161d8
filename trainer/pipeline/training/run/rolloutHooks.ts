import type { RolloutObserver } from '../../rollout/observer';
import type { RunControl } from './runControl';
import type { RunParts } from './runParts';
import type { RunReporter } from './runReporter';

/**
 * The training loop's hooks into the agent loop: pause at turn boundaries, hold at stop points
 * for the debugger (which sees the rollout as it stands, through the live snapshot), and report
 * rollout progress as trajectories end.
 */
export function rolloutHooks(control: RunControl, report: RunReporter, live: RunParts['live']): RolloutObserver {
  const snapshot = () => ({ trajectories: live.snapshot?.records() ?? [] });
  const step = () => live.snapshot?.step ?? 0;
  return {
    rolloutStarted: (trajectories) => {
      // Images are in the run directory as soon as a trajectory sees them: the debugger shows them live.
      report.writer?.writeImages(trajectories.flatMap((t) => (t.images ?? []).map(({ image }) => image)));
      live.snapshot?.rolloutStarted(trajectories);
    },
    turnGenerated: async (trajectory, turn) =>
      control.point({ step: step(), trajectory: trajectory.index, kind: 'turn', turn: turn.index }, snapshot),
    beforeToolCall: async (trajectory, call) => {
      live.snapshot?.callAnnounced(trajectory.index, call);
      await control.point(
        { step: step(), trajectory: trajectory.index, kind: 'call', turn: call.turnIndex, call: call.index },
        snapshot,
      );
    },
    toolCallFinished: async (trajectory, call) => {
      if (call.images?.length) report.writer?.writeImages(call.images);
      live.snapshot?.callFinished(trajectory.index, call);
      await control.point(
        { step: step(), trajectory: trajectory.index, kind: 'result', turn: call.turnIndex, call: call.index },
        snapshot,
      );
    },
    trajectoryFinished: async (trajectory) => {
      const current = live.snapshot;
      current?.trajectoryEnded(trajectory.index);
      if (current) {
        const { ended, total } = current.progress;
        report.progress(current.step, 'rollout', ended, total, current.tokensPerSecond());
      }
      await control.point({ step: step(), trajectory: trajectory.index, kind: 'end' }, snapshot);
    },
  };
}
