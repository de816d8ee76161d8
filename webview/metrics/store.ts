import type { HealthWarning, MetricsColumns, RunSummary } from '../../trainer/contract/protocol';

export type RecordKind = MetricsColumns['kinds'][number];

/**
 * One run's metrics as received: columns that grow as rows are appended. A metric first seen
 * in a later row gets nulls for the rows before it.
 */
export class RunMetrics {
  readonly steps: number[] = [];
  readonly kinds: RecordKind[] = [];
  readonly skipped: Array<string | null> = [];
  /** What each row's health checks found, null where nothing. */
  readonly warnings: Array<HealthWarning[] | null> = [];
  readonly values = new Map<string, Array<number | null>>();
  /** `kind metric` pairs that have at least one value, kept up to date by append. */
  private readonly present = new Set<string>();

  constructor(public run: RunSummary) {}

  get rows(): number {
    return this.steps.length;
  }

  append(columns: MetricsColumns): void {
    const before = this.steps.length;
    const added = columns.steps.length;
    for (const [name, column] of Object.entries(columns.values)) {
      if (column.length !== added)
        throw new Error(`metrics of ${this.run.dir}: column ${name} has ${column.length} values for ${added} steps`);
    }
    if (
      columns.kinds.length !== added ||
      columns.skipped.length !== added ||
      (columns.warnings && columns.warnings.length !== added)
    )
      throw new Error(`metrics of ${this.run.dir}: kinds, skipped and warnings must have one entry per step`);
    for (let i = 0; i < added; i++) {
      this.steps.push(columns.steps[i]);
      this.kinds.push(columns.kinds[i]);
      this.skipped.push(columns.skipped[i]);
      this.warnings.push(columns.warnings?.[i] ?? null);
    }
    for (const [name, column] of Object.entries(columns.values)) {
      let mine = this.values.get(name);
      if (!mine) {
        mine = new Array<number | null>(before).fill(null);
        this.values.set(name, mine);
      }
      for (let i = 0; i < added; i++) {
        mine.push(column[i]);
        if (column[i] !== null) this.present.add(`${columns.kinds[i]} ${name}`);
      }
    }
    for (const mine of this.values.values()) while (mine.length < this.steps.length) mine.push(null);
  }

  /** Kinds of record present ('train', 'eval', 'sft'), in that order. */
  kindsPresent(): RecordKind[] {
    const present = new Set(this.kinds);
    return (['train', 'eval', 'sft'] as const).filter((k) => present.has(k));
  }

  /** Steps whose update was skipped, with why. */
  skippedSteps(): Array<{ step: number; reason: string }> {
    const out: Array<{ step: number; reason: string }> = [];
    this.skipped.forEach((reason, i) => reason !== null && out.push({ step: this.steps[i], reason }));
    return out;
  }

  /** Whether the metric has at least one value among rows of `kind`. */
  has(metric: string, kind: RecordKind): boolean {
    return this.present.has(`${kind} ${metric}`);
  }
}
