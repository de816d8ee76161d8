import type { BandMode } from '../../trainer/contract/protocol';
import type { ChartGroup } from './groups';
import type { RecordKind, RunMetrics } from './store';

/** One line of a chart. Band edges are lines too (drawn invisibly, filled between). */
export interface SeriesData {
  label: string;
  run: number;
  metric: string;
  kind: RecordKind;
  role: 'line' | 'band-upper' | 'band-lower';
  /** Aligned with the chart's x: null where the run's row has no finite value (drawn as a gap), undefined where the run has no row of this kind at that step (drawn across). */
  values: Array<number | null | undefined>;
}

export interface ChartData {
  x: number[];
  series: SeriesData[];
  /** Pairs of series indices (into `series`) whose area between is filled. */
  bands: Array<{ upper: number; lower: number; run: number }>;
  /** Steps whose update was skipped, per run. */
  skipped: Array<{ run: number; step: number; reason: string }>;
  /** Health charts: the steps of the panel's own run whose health checks warned, most severe per step. */
  warned: Array<{ step: number; severity: 'warn' | 'critical' }>;
}

/**
 * Exponential moving average with TensorBoard's debiasing (early points are not pulled toward
 * zero); missing values (null, undefined) stay as they are and do not reset the average.
 * weight 0 returns the values unchanged.
 */
export function ema<T extends number | null | undefined>(values: readonly T[], weight: number): T[] {
  if (weight <= 0) return values.slice();
  const out = new Array<T>(values.length);
  let average = 0;
  let norm = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) {
      out[i] = v;
      continue;
    }
    average = average * weight + (1 - weight) * v;
    norm = norm * weight + (1 - weight);
    out[i] = (average / norm) as T;
  }
  return out;
}

/**
 * Every step of the runs, ascending and distinct: the charts' shared x axis. `rowsAreX`: the
 * only run's rows are the axis as they are (strictly increasing steps), so no lookup is needed.
 */
export function unionSteps(runs: readonly RunMetrics[]): { x: number[]; rowsAreX: boolean } {
  if (runs.length === 1) {
    const steps = runs[0].steps;
    let increasing = true;
    for (let i = 1; i < steps.length && increasing; i++) increasing = steps[i] > steps[i - 1];
    if (increasing) return { x: steps.slice(), rowsAreX: true };
  }
  const all = new Set<number>();
  for (const run of runs) for (const step of run.steps) all.add(step);
  return { x: [...all].sort((a, b) => a - b), rowsAreX: false };
}

function column(
  run: RunMetrics,
  metric: string,
  kind: RecordKind,
  x: readonly number[],
  position: Map<number, number> | undefined,
): Array<number | null | undefined> {
  const out = new Array<number | null | undefined>(x.length).fill(undefined);
  const values = run.values.get(metric);
  if (!values) return out;
  for (let i = 0; i < run.steps.length; i++) {
    if (run.kinds[i] !== kind) continue;
    out[position ? position.get(run.steps[i])! : i] = values[i];
  }
  return out;
}

const KIND_SUFFIX: Record<RecordKind, string> = { train: '', eval: ' (eval)', sft: ' (sft)' };

export function seriesLabel(runs: readonly RunMetrics[], run: number, metric: string, kind: RecordKind): string {
  const name = metric + KIND_SUFFIX[kind];
  return runs.length > 1 ? `${runs[run].run.id} · ${name}` : name;
}

/** The chart of `group` over `runs` (the panel's own run first): aligned series, smoothed, with the reward band. */
export function chartData(
  group: ChartGroup,
  runs: readonly RunMetrics[],
  options: { smoothing: number; band: BandMode },
): ChartData {
  const { x, rowsAreX } = unionSteps(runs);
  const position = rowsAreX ? undefined : new Map(x.map((step, i) => [step, i]));
  const series: SeriesData[] = [];
  const bands: ChartData['bands'] = [];
  runs.forEach((run, r) => {
    for (const kind of run.kindsPresent()) {
      for (const metric of group.metrics) {
        if (!run.has(metric, kind)) continue;
        series.push({
          label: seriesLabel(runs, r, metric, kind),
          run: r,
          metric,
          kind,
          role: 'line',
          values: ema(column(run, metric, kind, x, position), options.smoothing),
        });
      }
    }
    const band = group.band && bandEdges(run, group.band, options.band, x, position);
    if (band) {
      const upper =
        series.push({
          label: `${seriesLabel(runs, r, group.band!.mean, 'train')} ${band.label} upper`,
          run: r,
          metric: group.band!.mean,
          kind: 'train',
          role: 'band-upper',
          values: ema(band.upper, options.smoothing),
        }) - 1;
      const lower =
        series.push({
          label: `${seriesLabel(runs, r, group.band!.mean, 'train')} ${band.label} lower`,
          run: r,
          metric: group.band!.mean,
          kind: 'train',
          role: 'band-lower',
          values: ema(band.lower, options.smoothing),
        }) - 1;
      bands.push({ upper, lower, run: r });
    }
  });
  const skipped = runs.flatMap((run, r) => run.skippedSteps().map((s) => ({ run: r, ...s })));
  return { x, series, bands, skipped, warned: group.section === 'health' && runs[0] ? warnedSteps(runs[0]) : [] };
}

/** Each step with warnings once, critical where any of its warnings is. */
export function warnedSteps(run: RunMetrics): ChartData['warned'] {
  const bySteps = new Map<number, 'warn' | 'critical'>();
  run.warnings.forEach((warnings, i) => {
    for (const w of warnings ?? []) if (bySteps.get(run.steps[i]) !== 'critical') bySteps.set(run.steps[i], w.severity);
  });
  return [...bySteps].map(([step, severity]) => ({ step, severity })).sort((a, b) => a.step - b.step);
}

function bandEdges(
  run: RunMetrics,
  band: NonNullable<ChartGroup['band']>,
  mode: BandMode,
  x: readonly number[],
  position: Map<number, number> | undefined,
): { upper: Array<number | null | undefined>; lower: Array<number | null | undefined>; label: string } | undefined {
  const hasMinMax = run.has(band.min, 'train') && run.has(band.max, 'train');
  const hasStd = run.has(band.std, 'train') && run.has(band.mean, 'train');
  if (mode === 'minmax' && hasMinMax)
    return {
      upper: column(run, band.max, 'train', x, position),
      lower: column(run, band.min, 'train', x, position),
      label: 'min–max',
    };
  if (hasStd) {
    const mean = column(run, band.mean, 'train', x, position);
    const std = column(run, band.std, 'train', x, position);
    const edge = (sign: number) =>
      mean.map((m, i) =>
        m === undefined || std[i] === undefined ? undefined : m === null || std[i] === null ? null : m + sign * std[i]!,
      );
    return { upper: edge(1), lower: edge(-1), label: '±std' };
  }
  if (hasMinMax)
    return {
      upper: column(run, band.max, 'train', x, position),
      lower: column(run, band.min, 'train', x, position),
      label: 'min–max',
    };
  return undefined;
}
