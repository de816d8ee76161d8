/**
 * What changed between the config a run was trained with (run.json's `config`, the hashed part
 * of the config) and the one given now: each differing field by its dotted path, with both
 * values, so a refused resume says what to put back rather than showing two hashes.
 */

const MAX_SHOWN = 8;

function show(value: unknown): string {
  if (value === undefined) return '(unset)';
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function collect(recorded: unknown, current: unknown, at: string, out: string[]): void {
  if (isPlainObject(recorded) && isPlainObject(current)) {
    for (const key of [...new Set([...Object.keys(recorded), ...Object.keys(current)])].sort())
      collect(recorded[key], current[key], at ? `${at}.${key}` : key, out);
    return;
  }
  if (JSON.stringify(recorded) !== JSON.stringify(current)) out.push(`${at}: ${show(recorded)} → ${show(current)}`);
}

/** "algorithm.groupSize: 4 → 8" for each field that differs (the hash itself left out), at most MAX_SHOWN and a count of the rest. */
export function configDifferences(recorded: Record<string, unknown>, current: Record<string, unknown>): string[] {
  const { configHash: _recordedHash, ...before } = recorded;
  const { configHash: _currentHash, ...after } = current;
  const out: string[] = [];
  collect(before, after, '', out);
  return out.length > MAX_SHOWN ? [...out.slice(0, MAX_SHOWN), `… and ${out.length - MAX_SHOWN} more`] : out;
}
