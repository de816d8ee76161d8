import type { RlSample } from './samples';
import { lastPolicyToken, type Trajectory } from '../rollout/trajectory';
import type { TrajectoryRewards } from '../rewards/score';

/**
 * What the RL side trains on: the trajectory's mask and its rewards placed on tokens — the
 * outcome reward on the last generated token, each call's (scaled) process reward on the call's
 * last token. Both are policy tokens, so reward-to-go over policy tokens credits a call's reward
 * to the tokens up to and including the call, and the outcome to every generated token. (KL in
 * the reward is added by prepareBatch, once the reference policy has scored the batch.)
 */
export function toRlSample(trajectory: Trajectory<object>, rewards: TrajectoryRewards): RlSample {
  if (rewards.calls.length !== trajectory.calls.length) {
    throw new RangeError(
      `trajectory ${trajectory.index}: ${rewards.calls.length} call rewards for ${trajectory.calls.length} calls`,
    );
  }
  const mask = Uint8Array.from(trajectory.mask);
  const last = lastPolicyToken(trajectory);
  // Nothing generated (an agent's sequence the model never answered — it never called it, or its
  // prompt did not fit the budget: rollout/gateway): nothing is trained on, but its outcome still
  // counts in its group's baseline, on its last token.
  if (last < 0 && trajectory.finishReason !== 'error' && !trajectory.agent)
    throw new RangeError(`trajectory ${trajectory.index}: no generated token to put the outcome reward on`);
  const calls = trajectory.calls.map((call, i) => {
    if (!mask[call.tokenEnd])
      throw new RangeError(
        `trajectory ${trajectory.index}: call ${i} ends on token ${call.tokenEnd}, which the policy did not generate`,
      );
    return { token: call.tokenEnd, reward: rewards.calls[i].scaled };
  });
  return {
    group: trajectory.group,
    mask,
    outcome: { token: last < 0 ? mask.length - 1 : last, reward: rewards.outcome },
    calls,
  };
}
