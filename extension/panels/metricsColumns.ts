import type { HealthWarning, MetricsColumns, MetricsRecord } from '../../trainer/contract/protocol';

/**
 * Metrics records as columns, one array per metric aligned with `steps`: the form the Metrics
 * webview receives (see MetricsColumns). A metric missing from a record is null in its row; the
 * health warnings travel only when some record has one.
 */
export function toMetricsColumns(records: readonly MetricsRecord[]): MetricsColumns {
  const n = records.length;
  const columns: MetricsColumns = { steps: new Array(n), kinds: new Array(n), skipped: new Array(n), values: {} };
  for (let row = 0; row < n; row++) {
    const record = records[row];
    columns.steps[row] = record.step;
    columns.kinds[row] = record.kind;
    columns.skipped[row] = record.skipped?.reason ?? null;
    for (const name in record.values) {
      const column = (columns.values[name] ??= new Array<number | null>(n).fill(null));
      column[row] = record.values[name];
    }
    if (record.warnings?.length)
      (columns.warnings ??= new Array<HealthWarning[] | null>(n).fill(null))[row] = record.warnings;
  }
  return columns;
}
