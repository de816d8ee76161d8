import type { z } from 'zod';

/**
 * A tool's schema issues in the few words a policy can act on, for its error observation:
 * `"to" is missing`, `"cmi" is not one of km, m, mi`, `"amount" must be a number`. The record keeps
 * zod's full text; this is what fits a small tool-result budget (a 1,282-token vocabulary spends
 * about 20 tokens on one issue): the first `limit` issues, and how many more.
 */
export function summarizeIssues(issues: readonly z.core.$ZodIssue[], input: unknown, limit = 1): string {
  const parts = issues.slice(0, limit).map((issue) => summarizeIssue(issue, valueAt(input, issue.path)));
  if (issues.length > limit) parts.push(`${issues.length - limit} more issue${issues.length - limit > 1 ? 's' : ''}`);
  return parts.join('; ');
}

function where(path: readonly PropertyKey[]): string {
  return path.length ? JSON.stringify(path.map(String).join('.')) : 'the arguments';
}

/** The value the policy wrote at `path` (zod's issues do not carry it). */
function valueAt(input: unknown, path: readonly PropertyKey[]): { found: boolean; value?: unknown } {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || !(key in value)) return { found: false };
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return { found: true, value };
}

function summarizeIssue(issue: z.core.$ZodIssue, written: { found: boolean; value?: unknown }): string {
  const at = where(issue.path);
  if (issue.path.length && (!written.found || written.value === undefined)) return `${at} is missing`;
  switch (issue.code) {
    case 'invalid_type':
      if (!written.found || written.value === undefined) return `${at} is missing`;
      return `${at} must be ${article(issue.expected)}`;
    case 'invalid_value': {
      const choices = issue.values.map((v) => String(v));
      const shown = choices.length > 6 ? `${choices.slice(0, 6).join(', ')}, …` : choices.join(', ');
      return `${JSON.stringify(written.value)} is not one of ${shown}`;
    }
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
    case 'too_big':
      return `${at} must be ${issue.inclusive === false ? 'below' : 'at most'} ${bound(issue.maximum, issue.origin)}`;
    case 'too_small':
      return `${at} must be ${issue.inclusive === false ? 'above' : 'at least'} ${bound(issue.minimum, issue.origin)}`;
    default:
      return `${at}: ${issue.message}`;
  }
}

function bound(limit: number | bigint, origin: string): string {
  const unit = origin === 'string' ? 'character' : origin === 'array' ? 'item' : '';
  return unit ? `${String(limit)} ${unit}${Number(limit) === 1 ? '' : 's'}` : String(limit);
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
