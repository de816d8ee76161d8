/**
 * What "Run Without Debugging" prints for a recorded run: there is nothing to run, so it
 * reports what the run holds — status, steps, and each step's headline metrics.
 */
import type { MetricsRecord } from '../../trainer/shared/protocol/runStore';
import { RunStoreReader } from '../../trainer/shared/runstore/reader';

const HEADLINE = ['reward/mean', 'score/exact_match', 'tools/error_rate', 'loss/total'] as const;

export function describeRecordedRun(runDirectory: string): string {
  const reader = new RunStoreReader(runDirectory);
  const run = reader.run();
  const steps = reader.steps();
  const metrics = new Map<number, MetricsRecord>(reader.metrics().records.filter((m) => m.kind === 'train').map((m) => [m.step, m]));
  const lines = [
    `${run.name} (${run.id}): ${run.algorithm} on ${run.device}, ${run.status}${run.error ? ` — ${run.error.message}` : ''}`,
    steps.length ? `${steps.length} step${steps.length === 1 ? '' : 's'} recorded (${steps[0]}–${steps[steps.length - 1]}) of ${run.totalSteps}` : 'no steps recorded',
  ];
  for (const step of steps) {
    const values = metrics.get(step)?.values ?? {};
    const shown = HEADLINE.filter((name) => typeof values[name] === 'number').map((name) => `${name} ${(values[name] as number).toFixed(3)}`);
    lines.push(`  step ${step}: ${shown.length ? shown.join(' · ') : 'no metrics recorded'}`);
  }
  return lines.join('\n');
}
