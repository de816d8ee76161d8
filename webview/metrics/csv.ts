import { ema } from './chartData';
import type { RecordKind, RunMetrics } from './store';

/** RFC 4180: quote a field that holds a comma, quote or line break; double the quotes inside. */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * The shown runs' metrics as CSV: one line per recorded row (run, kind, step), one column per
 * metric, and when smoothing is on, the smoothed value of each metric as it is charted (the EMA
 * over the run's rows of the same kind, in step order).
 */
export function metricsCsv(runs: readonly RunMetrics[], smoothing: number): string {
  const metrics = [...new Set(runs.flatMap((r) => [...r.values.keys()]))].sort();
  const smoothedHeader = smoothing > 0 ? metrics.map((m) => `${m} (EMA ${smoothing.toFixed(2)})`) : [];
  const lines = [['run', 'run_id', 'kind', 'step', 'skipped', ...metrics, ...smoothedHeader].map(csvField).join(',')];
  for (const run of runs) {
    const smoothed = new Map<string, Array<number | null>>();
    if (smoothing > 0) {
      for (const metric of metrics) {
        const column = run.values.get(metric);
        const out = new Array<number | null>(run.rows).fill(null);
        if (column) {
          for (const kind of ['train', 'eval', 'sft'] as RecordKind[]) {
            const rows = run.kinds
              .map((k, i) => (k === kind ? i : -1))
              .filter((i) => i >= 0)
              .sort((a, b) => run.steps[a] - run.steps[b]);
            const values = ema(
              rows.map((i) => column[i]),
              smoothing,
            );
            rows.forEach((row, j) => (out[row] = values[j]));
          }
        }
        smoothed.set(metric, out);
      }
    }
    for (let i = 0; i < run.rows; i++) {
      const fields: Array<string | number | null> = [
        run.run.name,
        run.run.id,
        run.kinds[i],
        run.steps[i],
        run.skipped[i],
      ];
      for (const metric of metrics) fields.push(run.values.get(metric)?.[i] ?? null);
      if (smoothing > 0) for (const metric of metrics) fields.push(smoothed.get(metric)![i]);
      lines.push(fields.map(csvField).join(','));
    }
  }
  return lines.join('\n') + '\n';
}
