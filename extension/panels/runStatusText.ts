import { runMetric, scoreKey, type MetricsRecord, type RunRecord } from '../../trainer/contract/protocol';
import type { LiveProgress } from './source/runSource';

/** The newest training record, the one the status bar reports. */
export function latestTrainMetrics(records: readonly MetricsRecord[]): MetricsRecord | undefined {
  for (let i = records.length - 1; i >= 0; i--) if (records[i].kind === 'train') return records[i];
  return undefined;
}

function round(value: number | null | undefined, digits: number): string | undefined {
  return value === null || value === undefined ? undefined : value.toFixed(digits);
}

const PHASES: Record<LiveProgress['phase'], string> = {
  download: 'downloading the model',
  load: 'loading',
  sft: 'warm start',
  rollout: 'rollout',
  reward: 'rewards',
  update: 'update',
  eval: 'evaluation',
  checkpoint: 'checkpoint',
};

/**
 * What the status bar shows for a live run: step of total, mean reward, the task metric by its
 * name (`numeric_match 0.850`), rollout tokens per second. For a training running in this editor, `progress` (its latest progress event) adds
 * the phase in flight, and the tokens per second of the rollout in flight.
 */
export function runStatusText(
  run: RunRecord,
  latest: MetricsRecord | undefined,
  progress?: LiveProgress,
): { text: string; tooltip: string } {
  const inStep =
    progress && (progress.phase === 'rollout' || progress.phase === 'reward' || progress.phase === 'update')
      ? progress.step
      : undefined;
  const step = inStep ?? latest?.step ?? run.lastStep;
  const reward = round(latest?.values['reward/mean'], 3);
  const metric = runMetric(run);
  const score = round(latest?.values[scoreKey(metric)], 3);
  const live = progress?.phase === 'rollout' ? progress.tokensPerSecond : undefined;
  const throughput = live ?? latest?.values['throughput/rollout_tokens_per_s'];
  const parts = [`step ${step ?? '–'}/${run.totalSteps}`];
  if (progress && progress.done < progress.total)
    parts.push(
      `${PHASES[progress.phase]} ${progress.phase === 'rollout' || progress.phase === 'sft' || progress.phase === 'eval' ? `${progress.done}/${progress.total}` : '…'}`,
    );
  if (reward !== undefined) parts.push(`reward ${reward}`);
  if (score !== undefined) parts.push(`${metric} ${score}`);
  if (throughput !== null && throughput !== undefined) parts.push(`${Math.round(throughput)} tok/s`);
  const tooltip = [
    `Rollout Studio: ${run.name} (${run.id}) is running${progress ? ' in this window' : ''}`,
    `${run.algorithm} on ${run.device}, step ${step ?? 'none yet'} of ${run.totalSteps}`,
    `task metric: ${metric} (the mean of that outcome reward over the step's trajectories)`,
    latest ? `last record ${latest.time}` : 'no metrics recorded yet',
    'Click to open its Trajectories and Metrics',
  ].join('\n');
  return { text: `$(pulse) ${parts.join(' · ')}`, tooltip };
}
