/**
 * Which metrics share a chart. The metric names with a fixed meaning (METRICS in
 * trainer/contract/protocol/runStore.ts) have their charts in a fixed order; any other recorded metric
 * gets a chart too, grouped by its prefix (`reward/format`, `reward/f1` → "reward/…"). The
 * health charts ("is it learning?": signal, entropy, clipping, tool-call errors, KL) come first,
 * in a section of their own.
 */
export type ChartSection = 'health' | 'training';

export interface ChartGroup {
  id: string;
  title: string;
  section: ChartSection;
  /** Metrics drawn as lines, in legend order. */
  metrics: string[];
  /** The reward chart shades the spread of `reward/mean`: between min and max, or ±std. */
  band?: { mean: string; min: string; max: string; std: string } | undefined;
}

interface KnownGroup {
  id: string;
  title: string;
  section?: ChartSection;
  exact?: string[];
  prefix?: string;
  band?: ChartGroup['band'];
}

const REWARD_BAND = { mean: 'reward/mean', min: 'reward/min', max: 'reward/max', std: 'reward/std' };

const KNOWN: KnownGroup[] = [
  {
    id: 'signal',
    title: 'Groups without learning signal (share)',
    section: 'health',
    exact: ['health/zero_signal_groups', 'health/dropped_groups'],
    prefix: 'health/',
  },
  { id: 'entropy', title: 'Entropy (nats/token)', section: 'health', prefix: 'entropy/' },
  { id: 'clip', title: 'Clip fraction', section: 'health', prefix: 'clip/' },
  {
    id: 'tool-errors',
    title: 'Failed tool calls (share): unreadable, off-schema, any',
    section: 'health',
    exact: ['tools/parse_error_rate', 'tools/schema_error_rate', 'tools/error_rate'],
  },
  { id: 'kl', title: 'KL divergence (to the reference; of the update)', section: 'health', prefix: 'kl/' },
  {
    id: 'reward',
    title: 'Reward (mean, spread)',
    exact: ['reward/mean', 'reward/outcome_mean', 'reward/process_mean'],
    band: REWARD_BAND,
  },
  { id: 'score', title: 'Task score', prefix: 'score/' },
  { id: 'loss', title: 'Policy, value and total loss', exact: ['loss/policy', 'loss/value', 'loss/total'] },
  { id: 'loss-terms', title: 'Other loss terms', prefix: 'loss/' },
  { id: 'grad', title: 'Gradient norm', prefix: 'grad/' },
  { id: 'lr', title: 'Learning rate', exact: ['lr'] },
  { id: 'length', title: 'Response length (tokens)', prefix: 'length/' },
  { id: 'tool-calls', title: 'Tool calls per trajectory', exact: ['tools/calls_per_trajectory'] },
  {
    id: 'warm-start-check',
    title: "Warm start: demonstrations' turns written token for token (share)",
    exact: ['sft/check_calls', 'sft/check_turns'],
  },
  { id: 'throughput', title: 'Throughput (tokens/s)', prefix: 'throughput/' },
  { id: 'time', title: 'Time per phase (s)', prefix: 'time/' },
];

/**
 * The charts for these metric names, known groups first in their fixed order, then the others
 * by name. With the run's task metric, its chart is titled by it and shows it first.
 */
export function groupMetrics(names: Iterable<string>, metric?: string): ChartGroup[] {
  const all = new Set(names);
  const remaining = new Set(all);
  // The spread of the reward is drawn as the band around its mean, not as lines of its own.
  if (all.has(REWARD_BAND.mean))
    for (const edge of [REWARD_BAND.min, REWARD_BAND.max, REWARD_BAND.std]) remaining.delete(edge);
  const groups: ChartGroup[] = [];
  for (const known of KNOWN) {
    const metrics = (known.exact ?? []).filter((m) => remaining.has(m));
    if (known.prefix)
      metrics.push(...[...remaining].filter((m) => m.startsWith(known.prefix!) && !metrics.includes(m)).sort());
    const headline =
      known.id === 'score' && metric !== undefined && metrics.includes(`score/${metric}`)
        ? `score/${metric}`
        : undefined;
    if (headline) metrics.sort((a, b) => Number(b === headline) - Number(a === headline));
    const hasBand =
      known.band &&
      all.has(known.band.mean) &&
      ((all.has(known.band.min) && all.has(known.band.max)) || all.has(known.band.std));
    if (metrics.length === 0) continue;
    metrics.forEach((m) => remaining.delete(m));
    groups.push({
      id: known.id,
      title: headline ? `Task metric: ${metric}` : known.title,
      section: known.section ?? 'training',
      metrics,
      ...(hasBand ? { band: known.band } : {}),
    });
  }
  const byPrefix = new Map<string, string[]>();
  for (const name of [...remaining].sort()) {
    const slash = name.indexOf('/');
    const prefix = slash > 0 ? name.slice(0, slash) : name;
    byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), name]);
  }
  for (const [prefix, metrics] of byPrefix) {
    const title = metrics.length === 1 && metrics[0] === prefix ? prefix : `${prefix}/…`;
    groups.push({ id: `other-${prefix}`, title, section: 'training', metrics });
  }
  return groups;
}
