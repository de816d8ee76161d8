import type { MetricsColumns, MetricsRecord } from '../../trainer/protocol';

/**
 * Metrics records as columns, one array per metric aligned with `steps`: the form the Metrics
 * webview receives (see MetricsColumns). A metric missing from a record is null in its row.
 */
export function toMetricsColumns(records: readonly MetricsRecord[]): MetricsColumns {
  const columns: MetricsColumns = { steps: [], kinds: [], skipped: [], values: {} };
  records.forEach((record, row) => {
    columns.steps.push(record.step);
    columns.kinds.push(record.kind);
    columns.skipped.push(record.skipped?.reason ?? null);
    for (const [name, value] of Object.entries(record.values)) {
      let column = columns.values[name];
      if (!column) {
        column = new Array<number | null>(row).fill(null);
        columns.values[name] = column;
      }
      column.push(value);
    }
    for (const column of Object.values(columns.values)) if (column.length === row) column.push(null);
  });
  return columns;
}
