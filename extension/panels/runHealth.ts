import type { HealthWarning, MetricsRecord } from '../../trainer/contract/protocol';

/**
 * What the editor says about a live run's health, without VS Code: the status-bar marker of the
 * newest step's warnings, and which warnings deserve a notification. The trainer's health checks
 * write the warnings (MetricsRecord.warnings); this only decides how loudly to repeat them.
 */

/** Short names for the status bar; a code not listed here is shown with its underscores as spaces. */
const SHORT_NAMES: Record<string, string> = {
  zero_signal: 'no learning signal',
  collapse: 'collapse',
  collapse_risk: 'collapse risk',
  tool_errors: 'tool-call errors',
  entropy_collapse: 'entropy collapse',
  entropy_explosion: 'entropy rising',
  clip_fraction: 'clipping high',
  truncated: 'answers cut off',
  kl_growth: 'KL growing',
  heldout_drop: 'held-out score fell',
  heldout_collapse: 'held-out score collapsed',
  no_gain: 'no gain from RL',
  warm_start_calls: 'warm start short of its calls',
};

export function shortName(code: string): string {
  return SHORT_NAMES[code] ?? code.replace(/_/g, ' ');
}

/** The warnings of the newest step that has records (its training record and the evaluation after it), critical first. */
export function latestStepWarnings(
  records: readonly MetricsRecord[],
): { step: number; warnings: HealthWarning[] } | undefined {
  let step = -1;
  for (const record of records) if (record.kind !== 'sft' && record.step > step) step = record.step;
  if (step < 0) return undefined;
  const warnings = records.filter((r) => r.kind !== 'sft' && r.step === step).flatMap((r) => r.warnings ?? []);
  return { step, warnings: [...warnings].sort((a, b) => severityRank(b) - severityRank(a)) };
}

function severityRank(warning: HealthWarning): number {
  return warning.severity === 'critical' ? 1 : 0;
}

/** One warning in plain words: what was seen, what to try, what the trainer did. */
export function warningLines(warning: HealthWarning): string[] {
  return [
    `${warning.severity === 'critical' ? 'Critical' : 'Warning'}: ${warning.message}`,
    `Try: ${warning.advice}`,
    ...(warning.action ? [`Done: ${warning.action}`] : []),
  ];
}

export interface HealthMarker {
  /** With a codicon: `$(error) collapse`, `$(warning) no learning signal +1`. */
  text: string;
  tooltip: string;
  severity: HealthWarning['severity'];
  step: number;
}

/** The status-bar marker while the newest step has warnings; undefined when it has none. */
export function healthMarker(records: readonly MetricsRecord[]): HealthMarker | undefined {
  const latest = latestStepWarnings(records);
  if (!latest || latest.warnings.length === 0) return undefined;
  const [first, ...rest] = latest.warnings;
  const severity = first.severity;
  const text = `$(${severity === 'critical' ? 'error' : 'warning'}) ${shortName(first.code)}${rest.length ? ` +${rest.length}` : ''}`;
  const tooltip = [
    `Rollout Studio: what the health checks found at step ${latest.step}`,
    ...latest.warnings.flatMap((w) => ['', ...warningLines(w)]),
    '',
    'Click to open the Metrics panel',
  ].join('\n');
  return { text, tooltip, severity, step: latest.step };
}

/** Keys already notified; kept by the caller (across reloads, in the workspace's state). */
export interface NotifiedKeys {
  has(key: string): boolean;
  add(key: string): void;
}

export interface HealthNotice {
  severity: HealthWarning['severity'];
  message: string;
  /** The code of the warning the message is about. */
  code: string;
  step: number;
}

/**
 * Which of a run's new records deserve a notification: the first critical warning of the run,
 * and each warn code once per run. One notice at most per call, the most severe (then the
 * newest); other warnings due at the same time are marked as told and counted in its message,
 * so a burst of records never becomes a burst of notifications. `run.key` tells runs apart (its
 * directory), `run.name` is shown.
 */
export function healthNotice(
  run: { key: string; name: string },
  records: readonly MetricsRecord[],
  notified: NotifiedKeys,
): HealthNotice | undefined {
  const due: Array<{ warning: HealthWarning; step: number }> = [];
  const keysDue = new Set<string>();
  for (const record of records) {
    for (const warning of record.warnings ?? []) {
      const key = warning.severity === 'critical' ? `${run.key} critical` : `${run.key} warn ${warning.code}`;
      if (notified.has(key) || keysDue.has(key)) continue;
      keysDue.add(key);
      due.push({ warning, step: record.step });
    }
  }
  if (due.length === 0) return undefined;
  for (const key of keysDue) notified.add(key);
  const chosen = due.reduce((best, next) =>
    severityRank(next.warning) > severityRank(best.warning) ||
    (severityRank(next.warning) === severityRank(best.warning) && next.step >= best.step)
      ? next
      : best,
  );
  const others = due.length - 1;
  const { warning, step } = chosen;
  const message = [
    `Rollout Studio: ${run.name}, step ${step}: ${sentence(warning.message)}`,
    `Try: ${sentence(warning.advice)}`,
    warning.action ? `Done: ${sentence(warning.action)}` : '',
    others ? `${others} other warning${others > 1 ? 's' : ''} in the Metrics panel.` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { severity: warning.severity, message, code: warning.code, step };
}

/** The text with a full stop, unless it ends in punctuation already. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
