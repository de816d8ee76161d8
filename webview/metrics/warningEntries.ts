import type { HealthWarning } from '../../trainer/contract/protocol';
import type { RecordKind, RunMetrics } from './store';

/**
 * One line of the warnings list: a warning, or the same warning seen at consecutive steps
 * (zero-signal groups are often flagged step after step; forty identical lines would bury the
 * one collapse). The newest occurrence's words are shown. A warning that says what the trainer
 * did (a rollback) is an event and always has a line of its own.
 */
export interface WarningEntry {
  code: string;
  severity: HealthWarning['severity'];
  kind: RecordKind;
  firstStep: number;
  lastStep: number;
  /** Records merged into this line. */
  occurrences: number;
  /** The newest occurrence. */
  warning: HealthWarning;
}

/** The run's warnings as lines, newest first (critical before warn at the same step). */
export function warningEntries(run: Pick<RunMetrics, 'steps' | 'kinds' | 'warnings'>): WarningEntry[] {
  const entries: WarningEntry[] = [];
  /** code + kind → the line still open for merging, and the row it last grew at. */
  const open = new Map<string, { entry: WarningEntry; row: number }>();
  /** Rows of each kind seen so far, so "consecutive" means the next record of that kind. */
  const rowOfKind = new Map<RecordKind, number>();
  run.steps.forEach((step, row) => {
    const kind = run.kinds[row];
    const ordinal = (rowOfKind.get(kind) ?? -1) + 1;
    rowOfKind.set(kind, ordinal);
    for (const warning of run.warnings[row] ?? []) {
      const key = `${kind} ${warning.code}`;
      const previous = open.get(key);
      if (
        previous &&
        previous.row === ordinal - 1 &&
        !warning.action &&
        !previous.entry.warning.action &&
        previous.entry.severity === warning.severity
      ) {
        previous.entry.lastStep = step;
        previous.entry.occurrences++;
        previous.entry.warning = warning;
        previous.row = ordinal;
        continue;
      }
      const entry: WarningEntry = {
        code: warning.code,
        severity: warning.severity,
        kind,
        firstStep: step,
        lastStep: step,
        occurrences: 1,
        warning,
      };
      entries.push(entry);
      open.set(key, { entry, row: ordinal });
    }
  });
  return entries
    .map((entry, order) => ({ entry, order }))
    .sort((a, b) => b.entry.lastStep - a.entry.lastStep || rank(b.entry) - rank(a.entry) || b.order - a.order)
    .map(({ entry }) => entry);
}

function rank(entry: WarningEntry): number {
  return entry.severity === 'critical' ? 1 : 0;
}

/** "step 37", "steps 12–37 (26 steps)", "evaluation after step 24". */
export function entrySteps(entry: WarningEntry): string {
  const what = entry.kind === 'eval' ? 'evaluation after step' : entry.kind === 'sft' ? 'warm-start step' : 'step';
  if (entry.occurrences === 1) return `${what} ${entry.lastStep}`;
  const plural =
    entry.kind === 'eval' ? 'evaluations after steps' : entry.kind === 'sft' ? 'warm-start steps' : 'steps';
  return `${plural} ${entry.firstStep}–${entry.lastStep} (${entry.occurrences} ${entry.kind === 'eval' ? 'evaluations' : 'steps'})`;
}
