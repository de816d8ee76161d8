/** Outcome and process rewards, their combination, and their placement on tokens. */
export { answerTag, finalText, type AnswerExtractor } from './answer';
export { RewardError } from './errors';
export { answerTokens, normalizeAnswer, tokenF1 } from './normalize';
export { defaultGroundTruth, exactMatch, f1, formatCheck, outcomeReward, substringMatch, type AnswerRewardOptions, type FormatRewardOptions, type GroundTruth } from './outcome';
export { toRlSample } from './placement';
export { checkRewardConfig, scoreTrajectories, type BatchRewards, type CallReward, type CombineMode, type RewardConfig, type TrajectoryRewards } from './score';
export type { OutcomeReward, ProcessReward } from './types';
