/**
 * What "Run Without Debugging" prints for a recorded run: there is nothing to run, so it
 * reports what the run holds — status, steps, and each step's headline metrics.
 */
import { runMetric, scoreKey, type MetricsRecord } from '../../../trainer/contract/protocol/runStore';
import { RunStoreReader } from '../../../trainer/contract/runstore/reader';

export function describeRecordedRun(runDirectory: string): string {
  const reader = new RunStoreReader(runDirectory);
  const run = reader.run();
  // The run's own task metric (`score/numeric_match`, …) beside the numbers every run has.
  const headline = ['reward/mean', scoreKey(runMetric(run)), 'tools/error_rate', 'loss/total'];
  const steps = reader.steps();
  const metrics = new Map<number, MetricsRecord>(
    reader
      .metrics()
      .records.filter((m) => m.kind === 'train')
      .map((m) => [m.step, m]),
  );
  const lines = [
    `${run.name} (${run.id}): ${run.algorithm} on ${run.device}, ${run.status}${run.error ? ` — ${run.error.message}` : ''}`,
    steps.length
      ? `${steps.length} step${steps.length === 1 ? '' : 's'} recorded (${steps[0]}–${steps[steps.length - 1]}) of ${run.totalSteps}`
      : 'no steps recorded',
  ];
  for (const step of steps) {
    const values = metrics.get(step)?.values ?? {};
    const shown = headline
      .filter((name) => typeof values[name] === 'number')
      .map((name) => `${name} ${(values[name] as number).toFixed(3)}`);
    lines.push(`  step ${step}: ${shown.length ? shown.join(' · ') : 'no metrics recorded'}`);
  }
  return lines.join('\n');
}
