import { scoreTrajectories } from '../../rewards/score';
import { toTrajectoryRecord } from '../step/trajectoryRecord';
import type { Episode } from '../../rollout/trajectory';
import { recordedDrawSchedule, type HealthWarning, type MetricsRecord } from '../../../contract/protocol/runStore';
import type { RunStoreWriter } from '../../../contract/runstore/writer';
import { evaluationRows } from './evaluationSchedule';
import { logWarnings } from '../run/warningLog';
import { finiteValues, rolloutMetrics } from '../step/rolloutMetrics';
import { seedFor, type RunParts } from '../run/runParts';
import { formatScore, scoreKey, taskMetric } from '../step/taskMetric';

export interface EvaluationResult {
  /** The task metric's name (see taskMetric.ts) and its mean over the rows; undefined without outcome rewards. */
  metric: string | undefined;
  score: number | undefined;
  reward: number;
  toolCallsPerTrajectory: number;
  rows: number;
}

/**
 * Held-out evaluation at `step` (0: before RL): the evaluation rows (the first 100 by default,
 * evaluationSchedule.ts) rolled out with the evaluation's sampling (greedy by default), scored
 * with the config's rewards; the trajectories written to `evals/`, the statistics recorded as
 * `eval` metrics with what `review` finds (the health checks against the best so far).
 */
export async function evaluateHeldOut(
  parts: RunParts,
  writer: RunStoreWriter,
  step: number,
  review: (result: EvaluationResult) => HealthWarning[] = () => [],
): Promise<EvaluationResult> {
  const { config, report } = parts;
  const data = parts.evalData!;
  const rows = data.rows.slice(0, evaluationRows(config, data.rows.length));
  const episodes: Episode[] = rows.map((row, i) => ({ row, group: i, sample: 0 }));
  report.progress(step, 'eval', 0, episodes.length);
  const trajectories = await parts.evalLoop.run(episodes, {
    seed: seedFor(config.seed, step, 17),
    signal: parts.control.signal,
    drawSchedule: recordedDrawSchedule(writer.record),
  });
  await parts.evalLoop.releasePolicy();
  const rewards = await scoreTrajectories(trajectories, config.rewards, parts.tools, { signal: parts.control.signal });
  writer.writeImages(trajectories.flatMap((t) => (t.images ?? []).map(({ image }) => image)));
  writer.writeEvaluation(
    step,
    trajectories.map((t, i) =>
      toTrajectoryRecord(t, rewards.trajectories[i], { step, tokenizer: parts.model.tokenizer }),
    ),
  );
  const metric = taskMetric(config);
  const metrics = rolloutMetrics(trajectories, rewards, metric);
  const result: EvaluationResult = {
    metric,
    score: metric === undefined ? undefined : metrics[scoreKey(metric)],
    reward: metrics['reward/mean'],
    toolCallsPerTrajectory: metrics['tools/calls_per_trajectory'],
    rows: rows.length,
  };
  const warnings = review(result);
  const record: MetricsRecord = {
    step,
    time: new Date().toISOString(),
    kind: 'eval',
    ...finiteValues(metrics),
    ...(warnings.length ? { warnings } : {}),
  };
  report.metrics(record);
  report.progress(step, 'eval', episodes.length, episodes.length);
  const score =
    result.metric !== undefined && result.score !== undefined ? `${formatScore(result.metric, result.score)}, ` : '';
  report.log(
    `eval at step ${step} over ${rows.length} rows: ${score}reward ${result.reward.toFixed(3)}, ${result.toolCallsPerTrajectory.toFixed(2)} tool calls per trajectory`,
  );
  logWarnings(report.log, step, warnings);
  return result;
}
