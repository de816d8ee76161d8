import type { SortOrder, TrajectoryColumn, TrajectoryFilters, TrajectoryRow } from '../../trainer/contract/protocol';

/** The table's rows: filtering, sorting and the choices the filters offer. Pure, so unit-testable. */

export const NO_FILTERS: TrajectoryFilters = {
  text: '',
  rewardMin: null,
  rewardMax: null,
  errors: 'any',
  tool: '',
  finishReason: '',
};

export const DEFAULT_SORT: SortOrder = { column: 'index', direction: 'asc' };

export function matchesFilters(row: TrajectoryRow, filters: TrajectoryFilters): boolean {
  if (filters.rewardMin !== null && row.reward < filters.rewardMin) return false;
  if (filters.rewardMax !== null && row.reward > filters.rewardMax) return false;
  if (filters.errors === 'with' && row.errors === 0) return false;
  if (filters.errors === 'without' && row.errors > 0) return false;
  if (filters.tool && !row.tools.includes(filters.tool)) return false;
  if (filters.finishReason && row.finishReason !== filters.finishReason) return false;
  if (filters.text) {
    const needle = filters.text.toLowerCase();
    if (
      !row.prompt.toLowerCase().includes(needle) &&
      !(row.answer ?? '').toLowerCase().includes(needle) &&
      !row.rowId.toLowerCase().includes(needle)
    )
      return false;
  }
  return true;
}

/** The value a column sorts by; undefined (an advantage that was not computed) sorts last either way. */
function sortKey(row: TrajectoryRow, column: TrajectoryColumn): number | string | undefined {
  switch (column) {
    case 'prompt':
      return row.prompt;
    case 'finishReason':
      return row.finishReason;
    default:
      return row[column];
  }
}

export function compareRows(a: TrajectoryRow, b: TrajectoryRow, sort: SortOrder): number {
  const x = sortKey(a, sort.column);
  const y = sortKey(b, sort.column);
  if (x === undefined || y === undefined) return x === y ? a.index - b.index : x === undefined ? 1 : -1;
  const sign = sort.direction === 'asc' ? 1 : -1;
  const order = typeof x === 'string' ? x.localeCompare(y as string) : x - (y as number);
  // Ties keep batch order, so a sort is stable and predictable across updates.
  return order !== 0 ? sign * order : a.index - b.index;
}

export function visibleRows(
  rows: readonly TrajectoryRow[],
  filters: TrajectoryFilters,
  sort: SortOrder,
): TrajectoryRow[] {
  return rows.filter((r) => matchesFilters(r, filters)).sort((a, b) => compareRows(a, b, sort));
}

/** Clicking a column sorts by it; clicking it again reverses. Numbers start high-to-low, text A–Z. */
export function toggleSort(current: SortOrder, column: TrajectoryColumn): SortOrder {
  if (current.column === column) return { column, direction: current.direction === 'asc' ? 'desc' : 'asc' };
  const textual = column === 'prompt' || column === 'finishReason' || column === 'index';
  return { column, direction: textual ? 'asc' : 'desc' };
}

/** Tool names called anywhere in the rows, sorted, for the tool filter. */
export function toolNames(rows: readonly TrajectoryRow[]): string[] {
  const names = new Set<string>();
  for (const row of rows) for (const tool of row.tools) names.add(tool);
  return [...names].sort();
}

/**
 * A reward bound typed by the user: empty means none; anything else must be a number.
 * Returns an error text for the field otherwise.
 */
export function parseBound(text: string): { value: number | null } | { error: string } {
  const trimmed = text.trim();
  if (trimmed === '') return { value: null };
  const value = Number(trimmed);
  return Number.isFinite(value) ? { value } : { error: `"${trimmed}" is not a number` };
}

/** The step the step field means: the typed one if it has trajectories, else the nearest one that has. */
export function nearestStep(steps: readonly number[], wanted: number): number | undefined {
  let best: number | undefined;
  for (const step of steps) if (best === undefined || Math.abs(step - wanted) < Math.abs(best - wanted)) best = step;
  return best;
}

/** The step before or after `current` among `steps` (ascending), or current when at an end. */
export function adjacentStep(steps: readonly number[], current: number, direction: -1 | 1): number {
  if (direction > 0) return steps.find((s) => s > current) ?? current;
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i] < current) return steps[i];
  return current;
}
