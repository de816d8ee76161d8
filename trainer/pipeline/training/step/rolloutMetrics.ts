import type { BatchRewards } from '../../rewards/score';
import type { Trajectory } from '../../rollout/trajectory';
import { scoreKey } from './taskMetric';

/**
 * Batch statistics of a rollout, under the names of METRICS (trainer/contract/protocol/runStore.ts);
 * with a task metric (an outcome reward's name, see taskMetric.ts), its mean as `score/<name>`.
 */
export function rolloutMetrics(
  trajectories: readonly Trajectory[],
  rewards: BatchRewards,
  metric?: string,
): Record<string, number> {
  const totals = rewards.trajectories.map((r) => r.total);
  const n = Math.max(1, trajectories.length);
  const mean = totals.reduce((a, b) => a + b, 0) / n;
  const calls = trajectories.flatMap((t) => t.calls);
  let policyTokens = 0;
  let entropy = 0;
  for (const t of trajectories) {
    t.mask.forEach((m, i) => {
      if (m) {
        policyTokens++;
        entropy += t.entropies[i];
      }
    });
  }
  const out: Record<string, number> = {
    'reward/mean': mean,
    'reward/std': Math.sqrt(totals.reduce((a, r) => a + (r - mean) ** 2, 0) / n),
    'reward/min': Math.min(...totals),
    'reward/max': Math.max(...totals),
    'reward/outcome_mean': rewards.trajectories.reduce((a, r) => a + r.outcome, 0) / n,
    'reward/process_mean': rewards.trajectories.reduce((a, r) => a + r.process, 0) / n,
    'entropy/mean': policyTokens ? entropy / policyTokens : 0,
    'length/response_mean': policyTokens / n,
    'length/total_mean': trajectories.reduce((a, t) => a + t.ids.length, 0) / n,
    'tools/calls_per_trajectory': calls.length / n,
    'tools/error_rate': calls.length ? calls.filter((c) => c.error).length / calls.length : 0,
    'health/truncated':
      trajectories.filter((t) => t.finishReason === 'max_turn_tokens' || t.finishReason === 'max_total_tokens').length /
      n,
    // The policy's own mistakes, apart from tools that threw or timed out: a call that could not be read, and one that named no known tool or broke its schema.
    'tools/parse_error_rate': calls.length ? calls.filter((c) => c.error?.kind === 'parse').length / calls.length : 0,
    'tools/schema_error_rate': calls.length
      ? calls.filter((c) => c.error?.kind === 'unknown_tool' || c.error?.kind === 'invalid_arguments').length /
        calls.length
      : 0,
  };
  // Each reward's mean, and the task metric's under its own key.
  const names = new Set(rewards.trajectories.flatMap((r) => Object.keys(r.components)));
  for (const name of names) {
    const value = rewards.trajectories.reduce((a, r) => a + (r.components[name] ?? 0), 0) / n;
    out[`reward/${name}`] = value;
    if (name === metric) out[scoreKey(name)] = value;
  }
  return out;
}

/** Split finite values from non-finite ones (JSON has no NaN): the record keeps null and names them. */
export function finiteValues(values: Record<string, number>): {
  values: Record<string, number | null>;
  nonFinite?: string[];
} {
  const out: Record<string, number | null> = {};
  const nonFinite: string[] = [];
  for (const [k, v] of Object.entries(values)) {
    if (Number.isFinite(v)) out[k] = v;
    else {
      out[k] = null;
      nonFinite.push(k);
    }
  }
  return nonFinite.length ? { values: out, nonFinite } : { values: out };
}
