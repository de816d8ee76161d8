/** The outcome: the temperature in `<answer>…</answer>` is the one asked for (the day's high or its low). */
import { answerTag, outcomeReward, type DatasetRow, type RewardConfig } from 'rollout-studio';

type Row = DatasetRow<{ answer: string }>;

export const rightTemperature = outcomeReward<Row>('exact_match', (trajectory, row) => {
  const answer = answerTag(trajectory)?.trim();
  if (answer === undefined || !/^-?\d+$/.test(answer)) return 0;
  return Number(answer) === Number(row.answer) ? 1 : 0;
});

export const rewards: RewardConfig<Row> = { outcome: [rightTemperature], errorPenalty: 0.1 };
