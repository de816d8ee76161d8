/** Rewards of the visual-zoom example: the answer's colour, exactly. */
import { exactMatch, type RewardConfig } from 'rollout-studio';
import type { ZoomRow } from './rows';

export const rewards: RewardConfig<ZoomRow> = {
  outcome: [exactMatch<ZoomRow>()],
  errorPenalty: 0.1,
};
