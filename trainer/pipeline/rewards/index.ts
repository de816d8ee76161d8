/** Outcome and process rewards and their combination. (Their placement on tokens is rl/rewardPlacement.ts.) */
export { answerTag, finalText, type AnswerExtractor } from './answer';
export { RewardError } from './rewardErrors';
export { answerTokens, normalizeAnswer, tokenF1 } from './answerText';
export {
  defaultGroundTruth,
  exactMatch,
  f1,
  formatCheck,
  outcomeReward,
  substringMatch,
  type AnswerRewardOptions,
  type FormatRewardOptions,
  type GroundTruth,
} from './outcome';
export {
  checkRewardConfig,
  scoreTrajectories,
  withoutProcessRewards,
  type BatchRewards,
  type CallReward,
  type CombineMode,
  type RewardConfig,
  type ScoreOptions,
  type TrajectoryRewards,
} from './score';
export {
  DEFAULT_PROCESS_NORM_MOMENTUM,
  ProcessRewardNormalizer,
  type ProcessNormalizerState,
} from './processRewardScale';
export type { OutcomeReward, ProcessReward } from './types';
