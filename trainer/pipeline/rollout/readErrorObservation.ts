import type { ToolErrorKind } from '../../contract/protocol/runStore';

/**
 * The inverse of `defaultErrorObservation`: which error an observation text reports, when all
 * that is left of a call is the text the policy saw — a trajectory scored through the reward
 * endpoint, or imported from another trainer's dumps. The served tools (serve-tools) answer
 * failed calls with exactly these texts, so a call's error kind survives the round trip through
 * verl and its process rewards (error penalties) come out as in our own loop. verl's own tool
 * failure text ("Error when executing tool: …") reads as `threw`.
 */
export interface ReadError {
  kind: ToolErrorKind;
  message: string;
}

const PATTERNS: [RegExp, ToolErrorKind][] = [
  [/^Error: bad call: /, 'parse'],
  [/^Error: no tool "/, 'unknown_tool'],
  [/^Error: \S+ arguments: /, 'invalid_arguments'],
  // The longer forms of earlier releases, still in older runs' dumps.
  [/^Error: the tool call could not be read: /, 'parse'],
  [/^Error: there is no tool named /, 'unknown_tool'],
  [/^Error: arguments of \S+ do not match its schema: /, 'invalid_arguments'],
  [/^Error: \S+ did not finish within \d+(\.\d+)? ms/, 'timeout'],
  [/^Error: \S+ failed: /, 'threw'],
  [/^Error when executing tool: /, 'threw'],
];

export function readErrorObservation(text: string): ReadError | undefined {
  const trimmed = text.trim();
  for (const [pattern, kind] of PATTERNS)
    if (pattern.test(trimmed)) return { kind, message: trimmed.replace(/^Error: /, '') };
  return undefined;
}
