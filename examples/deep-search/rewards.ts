/**
 * Rewards of the deep-search example: exact match of the `<answer>` (SQuAD normalisation) as the
 * outcome, each tool's own process reward (a call that brings up a needed fact no earlier call
 * had) at weight 0.1, and 0.1 off for a call that fails (unparseable, unknown tool, bad arguments).
 */
import { exactMatch, type RewardConfig } from 'rollout-studio';
import type { DeepSearchRow } from './rows';

export const rewards: RewardConfig<DeepSearchRow> = {
  outcome: [exactMatch<DeepSearchRow>()],
  toolRewards: { weight: 0.1 },
  errorPenalty: 0.1,
  combine: 'weighted-sum',
};
