import {
  runMetric,
  type RunRecord,
  type RunSummary,
  type TrajectoryRecordWithoutTokens,
  type TrajectoryRow,
} from '../../../trainer/contract/protocol';

/** A trajectory record reduced to its table row: counts and rewards, no text beyond prompt and answer. */
export function summarizeTrajectory(record: TrajectoryRecordWithoutTokens): TrajectoryRow {
  const calls = record.turns.flatMap((turn) => turn.toolCalls ?? []);
  const tools: string[] = [];
  const errorKinds: TrajectoryRow['errorKinds'] = [];
  let errors = 0;
  for (const call of calls) {
    if (call.name !== undefined && !tools.includes(call.name)) tools.push(call.name);
    if (call.error) {
      errors++;
      if (!errorKinds.includes(call.error.kind)) errorKinds.push(call.error.kind);
    }
  }
  return {
    step: record.step,
    index: record.index,
    group: record.group,
    sample: record.sample,
    rowId: record.rowId,
    prompt: record.prompt,
    ...(record.answer !== undefined ? { answer: record.answer } : {}),
    reward: record.rewards.total,
    outcome: record.rewards.outcome,
    process: record.rewards.process,
    ...(record.advantage !== undefined ? { advantage: record.advantage } : {}),
    turns: record.turns.length,
    toolCalls: calls.length,
    errors,
    tools,
    errorKinds,
    responseLength: record.lengths.response,
    totalLength: record.lengths.total,
    finishReason: record.finishReason,
  };
}

export function runSummaryOf(dir: string, run: RunRecord): RunSummary {
  return {
    dir,
    id: run.id,
    name: run.name,
    status: run.status,
    algorithm: run.algorithm,
    createdAt: run.createdAt,
    totalSteps: run.totalSteps,
    ...(run.lastStep !== undefined ? { lastStep: run.lastStep } : {}),
    ...(run.error ? { error: run.error.message } : {}),
    metric: runMetric(run),
    ...(run.best ? { best: run.best } : {}),
  };
}
