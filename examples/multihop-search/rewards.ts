/**
 * Rewards of the multi-hop example: exact match of the `<answer>` against the entity name (SQuAD
 * normalisation) as the outcome, and the search tool's own process reward (a search that finds
 * a needed document no earlier search had found), lightly weighted so that the answer dominates.
 * Failed calls (unparseable, unknown tool, bad arguments) cost a little.
 */
import { exactMatch, type RewardConfig } from 'rollout-studio';
import type { MultihopRow } from './rows';

export const rewards: RewardConfig<MultihopRow> = {
  outcome: [exactMatch<MultihopRow>()],
  toolRewards: { weight: 0.1 },
  errorPenalty: 0.1,
  combine: 'weighted-sum',
};
