import { EXPORT_PATH_PATTERN } from '../../contract/protocol/authoring';
import { UserCodeError } from '../../foundations/tools/toolErrors';

/**
 * Export paths: how the editor (and a person at the command line) names one value of a user
 * module — `search`, `tools[0]`, `rewards.outcome[0]` — the way the value is reached in code.
 * The code lenses compute them from the syntax tree; the trainer walks them in the loaded
 * module's exports.
 */

export type PathSegment = string | number;

export function parseExportPath(text: string): PathSegment[] {
  if (!EXPORT_PATH_PATTERN.test(text)) {
    throw new UserCodeError(
      `"${text}" is not an export path; write it as in code: "search", "tools[0]" or "rewards.outcome[0]"`,
    );
  }
  return [...text.matchAll(/[A-Za-z_$][\w$]*|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? Number(m[1]) : m[0]));
}

export function formatExportPath(segments: readonly PathSegment[]): string {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** The value at `path` in `exports`; the error names the file, the part of the path that is missing and what is there. */
export function resolveExportPath(exports: Record<string, unknown>, path: string, file: string): unknown {
  const segments = parseExportPath(path);
  let value: unknown = exports;
  segments.forEach((segment, i) => {
    const reached = i === 0 ? 'the module' : formatExportPath(segments.slice(0, i));
    if (typeof segment === 'number') {
      if (!Array.isArray(value))
        throw new UserCodeError(
          `${file}: ${reached} is not an array, so ${formatExportPath(segments.slice(0, i + 1))} does not exist`,
        );
      if (segment >= value.length)
        throw new UserCodeError(
          `${file}: ${reached} has ${value.length} element${value.length === 1 ? '' : 's'}, so ${formatExportPath(segments.slice(0, i + 1))} does not exist`,
        );
      value = value[segment];
      return;
    }
    if (typeof value !== 'object' || value === null || !(segment in value)) {
      if (i === 0) {
        const names = Object.keys(exports).filter((k) => k !== '__esModule');
        throw new UserCodeError(
          `${file}: does not export "${segment}"; its exports are: ${names.length ? names.join(', ') : '(none)'}`,
        );
      }
      throw new UserCodeError(`${file}: ${reached} has no property "${segment}"`);
    }
    value = (value as Record<string, unknown>)[segment];
  });
  return value;
}
