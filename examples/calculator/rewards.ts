/**
 * Rewards of the calculator example. The outcome is a numeric match written as a user reward
 * function: the SQuAD normalisation of `exactMatch` strips minus signs and decimal points, which
 * is wrong for numbers. "1,234", "1 234" and "1234.0" all match 1234.
 */
import { answerTag, outcomeReward, type RewardConfig, type Trajectory } from 'rollout-studio';
import type { CalculatorRow } from './rows';

/** The number in an answer, or undefined: digits with optional sign, grouping commas/spaces and decimals. */
export function parseNumber(text: string): number | undefined {
  const cleaned = text.trim().replace(/(?<=\d)[,\s](?=\d{3}\b)/g, '');
  if (!/^[-+]?\d+(\.\d+)?$/.test(cleaned)) return undefined;
  return Number(cleaned);
}

export const numericMatch = outcomeReward<CalculatorRow>(
  'numeric_match',
  (trajectory: Trajectory<CalculatorRow>, row: CalculatorRow) => {
    const answer = answerTag(trajectory);
    const value = answer === undefined ? undefined : parseNumber(answer);
    return value !== undefined && value === Number(row.answer) ? 1 : 0;
  },
);

export const rewards: RewardConfig<CalculatorRow> = {
  outcome: [numericMatch],
  errorPenalty: 0.1,
};
