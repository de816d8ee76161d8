/**
 * The task's outcome: the number in `<answer>…</answer>` equals the converted value. Named
 * `exact_match` so the trainer's evaluation reports it as the headline score.
 */
import { answerTag, outcomeReward, type DatasetRow, type RewardConfig, type Trajectory } from 'rollout-studio';

type Row = DatasetRow<{ answer: string }>;

export const numericAnswer = outcomeReward<Row>('exact_match', (trajectory: Trajectory<Row>, row: Row) => {
  const answer = answerTag(trajectory)?.replace(/,/g, '');
  if (answer === undefined || !/^-?\d+(\.\d+)?$/.test(answer)) return 0;
  return Number(answer) === Number(row.answer) ? 1 : 0;
});

export const rewards: RewardConfig<Row> = { outcome: [numericAnswer], errorPenalty: 0.1 };
