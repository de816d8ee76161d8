import type { MetricsRecord } from '../../contract/protocol/runStore';
import type { VerlMetricsLine } from './dumps';

/**
 * verl's metric names (verl/trainer/ppo/metric_utils.py compute_data_metrics, compute_timing_metrics,
 * compute_throughout_metrics; the actor's and critic's update metrics) as our charts know them.
 * Every verl metric is kept under its own name too, so nothing is lost.
 */
const ALIASES: Record<string, string> = {
  'critic/score/mean': 'reward/mean',
  'critic/score/max': 'reward/max',
  'critic/score/min': 'reward/min',
  'actor/pg_loss': 'loss/policy',
  'actor/kl_loss': 'loss/kl',
  'actor/entropy': 'entropy/mean',
  'actor/pg_clipfrac': 'clip/fraction',
  'actor/ppo_kl': 'kl/approx_update',
  'actor/grad_norm': 'grad/norm',
  'actor/lr': 'lr',
  'critic/vf_loss': 'loss/value',
  'response_length/mean': 'length/response_mean',
  'timing_s/gen': 'time/rollout_s',
  'timing_s/reward': 'time/reward_s',
  'timing_s/update_actor': 'time/update_s',
  'timing_s/step': 'time/step_s',
};

/** Values as a record holds them: a non-finite one (orjson writes NaN as null) is null and named. */
function finiteValues(values: Record<string, number>): Pick<MetricsRecord, 'values' | 'nonFinite'> {
  const nonFinite = Object.keys(values).filter((k) => !Number.isFinite(values[k]));
  const out = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Number.isFinite(v) ? v : null]));
  return nonFinite.length ? { values: out, nonFinite } : { values: out };
}

/** One logged step as our records: a `train` record, and an `eval` record for its validation metrics (`val-core/…`, `val-aux/…`). */
export function metricsRecords(line: VerlMetricsLine, time: string): MetricsRecord[] {
  const train: Record<string, number> = {};
  const evaluation: Record<string, number> = {};
  for (const [key, value] of Object.entries(line.data)) {
    const number =
      value === null ? NaN : typeof value === 'number' ? value : typeof value === 'boolean' ? Number(value) : undefined;
    if (number === undefined) continue; // strings and lists are not charted
    const target = key.startsWith('val-') ? evaluation : train;
    target[key] = number;
    const alias = ALIASES[key];
    if (alias && !(alias in target)) target[alias] = number;
  }
  const records: MetricsRecord[] = [];
  if (Object.keys(train).length) records.push({ step: line.step, time, kind: 'train', ...finiteValues(train) });
  if (Object.keys(evaluation).length)
    records.push({ step: line.step, time, kind: 'eval', ...finiteValues(evaluation) });
  return records;
}
