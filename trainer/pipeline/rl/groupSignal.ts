import { groups, type RlSample } from './samples';

/**
 * Which groups carry a learning signal for the group-baseline estimators (GRPO, Dr. GRPO, RLOO,
 * REINFORCE++-baseline; advantages.ts). Their advantage is the outcome reward minus the group's
 * baseline plus, call by call, each call's process reward minus the group's mean reward of the
 * same-numbered call (a member without that call counting 0). So a group gets exactly zero
 * advantage on every token when its members' outcome rewards are all equal and, for every call
 * number, their call rewards (0 for a call not made) are too: such a group has no signal.
 *
 * KL in the reward is left out on purpose: its −β·KL differences are β-sized noise that pulls
 * towards the reference policy, not a signal about the task (DAPO filters on the task's
 * accuracy; verl's `filter_groups.metric: acc`).
 */
export function groupsWithSignal(
  samples: readonly Pick<RlSample, 'group' | 'outcome' | 'calls'>[],
): Map<number, boolean> {
  const out = new Map<number, boolean>();
  for (const [group, members] of groups(samples as RlSample[])) {
    const first = samples[members[0]];
    const calls = Math.max(0, ...members.map((i) => samples[i].calls.length));
    const callReward = (i: number, j: number) => samples[i].calls[j]?.reward ?? 0;
    const differs = members.some(
      (i) =>
        samples[i].outcome.reward !== first.outcome.reward ||
        Array.from({ length: calls }, (_, j) => j).some((j) => callReward(i, j) !== callReward(members[0], j)),
    );
    out.set(group, differs);
  }
  return out;
}
