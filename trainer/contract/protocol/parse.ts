import { z } from 'zod';
import { PROTOCOL_VERSION } from './protocolVersion';

/** A message or record that failed validation. The text names where and what was expected. */
export class ProtocolError extends Error {
  constructor(
    message: string,
    readonly issues: readonly z.core.$ZodIssue[] = [],
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** "report.providers.cpu.available: expected boolean, received string" — one line per issue. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.flatMap((issue) => describeIssue(issue, [])).join('; ');
}

/**
 * Rule: a value that fits no member of a union is explained by the member it fitted furthest —
 * the one whose issues lie deepest — so `{ type: 'int4', lowMemory: 'yes' }` names
 * `quantize.lowMemory` rather than "Invalid input" at `quantize`. Ties keep the union's message.
 */
function describeIssue(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[]): string[] {
  const at = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const depth = (branch: readonly z.core.$ZodIssue[]) => Math.max(0, ...branch.map((i) => i.path.length));
    const furthest = issue.errors.reduce((best, branch) => (depth(branch) > depth(best) ? branch : best));
    if (depth(furthest) > 0) return furthest.flatMap((i) => describeIssue(i, at));
  }
  return [`${at.length ? at.map(String).join('.') : '(root)'}: ${issue.message}`];
}

/**
 * Validate `value` against `schema`. `what` names the source ("message from the trainer",
 * "runs/abc/run.json line 3") so the error says where the bad data came from.
 */
export function parseWith<T extends z.ZodType>(schema: T, value: unknown, what: string): z.infer<T> {
  if (typeof value === 'object' && value !== null && 'protocol' in value) {
    const version = (value as { protocol: unknown }).protocol;
    if (version !== PROTOCOL_VERSION) {
      throw new ProtocolError(
        `${what}: protocol version ${JSON.stringify(version)} is not supported (this build speaks version ${PROTOCOL_VERSION}); ` +
          'the trainer and the extension come from different releases — reinstall the extension.',
      );
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) throw new ProtocolError(`${what}: ${describeIssues(result.error.issues)}`, result.error.issues);
  return result.data;
}
