/** The outcome: the price in `<answer>…</answer>` equals the quote for the real distance. */
import { answerTag, outcomeReward, type DatasetRow, type RewardConfig, type Trajectory } from 'rollout-studio';

type Row = DatasetRow<{ answer: string }>;

export const rightPrice = outcomeReward<Row>('exact_match', (trajectory: Trajectory<Row>, row: Row) => {
  const answer = answerTag(trajectory)?.replace(/\s*(EUR|€)\s*$/, '');
  if (answer === undefined || !/^\d+(\.\d+)?$/.test(answer)) return 0;
  return Number(answer) === Number(row.answer) ? 1 : 0;
});

export const rewards: RewardConfig<Row> = { outcome: [rightPrice], errorPenalty: 0.1 };
