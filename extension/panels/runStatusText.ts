import type { MetricsRecord, RunRecord } from '../../trainer/protocol';

/** The newest training record, the one the status bar reports. */
export function latestTrainMetrics(records: readonly MetricsRecord[]): MetricsRecord | undefined {
  for (let i = records.length - 1; i >= 0; i--) if (records[i].kind === 'train') return records[i];
  return undefined;
}

function round(value: number | null | undefined, digits: number): string | undefined {
  return value === null || value === undefined ? undefined : value.toFixed(digits);
}

/** What the status bar shows for a live run: step of total, mean reward, rollout tokens per second. */
export function runStatusText(run: RunRecord, latest: MetricsRecord | undefined): { text: string; tooltip: string } {
  const step = latest?.step ?? run.lastStep;
  const reward = round(latest?.values['reward/mean'], 3);
  const throughput = latest?.values['throughput/rollout_tokens_per_s'];
  const parts = [`step ${step ?? '–'}/${run.totalSteps}`];
  if (reward !== undefined) parts.push(`reward ${reward}`);
  if (throughput !== null && throughput !== undefined) parts.push(`${Math.round(throughput)} tok/s`);
  const tooltip = [
    `Rollout Studio: ${run.name} (${run.id}) is running`,
    `${run.algorithm} on ${run.device}, step ${step ?? 'none yet'} of ${run.totalSteps}`,
    latest ? `last record ${latest.time}` : 'no metrics recorded yet',
    'Click to open its Trajectories and Metrics',
  ].join('\n');
  return { text: `$(pulse) ${parts.join(' · ')}`, tooltip };
}
