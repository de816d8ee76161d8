import { answerTag, outcomeReward, type DatasetRow, type RewardConfig } from 'rollout-studio';

/** A dataset row as the trainer loads it: the conversation, plus the fields the data gave it. */
type Row = DatasetRow<{ answer: string }>;

export const rightAmount = outcomeReward<Row>('exact_match', (trajectory, row) => {
  const answer = answerTag(trajectory);
  return answer !== undefined && Number(answer) === Number(row.answer) ? 1 : 0;
});

export const rewards: RewardConfig<Row> = { outcome: [rightAmount], errorPenalty: 0.1 };
