/** Numbers as panels show them: integers as they are, others to `digits` decimals, very small or large ones in exponent form. */
export function formatMetricValue(value: number | undefined | null, digits = 3): string {
  if (value === undefined || value === null) return '—';
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 1e5 || magnitude < 10 ** -digits) return value.toExponential(2);
  return value.toFixed(digits);
}

/** Numbers in a table column: always `digits` decimals, so a column lines up. */
export function formatFixed(value: number | undefined | null, digits = 3): string {
  if (value === undefined || value === null) return '—';
  if (!Number.isFinite(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 1e6 || (magnitude > 0 && magnitude < 10 ** -digits)) return value.toExponential(2);
  return value.toFixed(digits);
}
