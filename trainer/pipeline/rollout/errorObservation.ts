import type { ToolErrorKind } from '../../contract/protocol/runStore';

export interface ObservedError {
  kind: ToolErrorKind;
  /** The full message as recorded (a thrown error's stack included). */
  message: string;
  /** The tool, when the call got far enough to name one. */
  tool?: string | undefined;
  /** What was wrong in a few words (`"to" is missing`), when the runner could say. */
  summary?: string | undefined;
}

/** The text the policy sees in place of a result when a call fails. Configurable per run. */
export type ErrorObservation = (error: ObservedError) => string;

function firstLine(text: string): string {
  return text.split('\n', 1)[0];
}

/**
 * Short, one line, says what to fix — `Error: exchange arguments: "to" is missing` — so it
 * fits a small tool-result budget whole; stack traces and zod's full text stay in the record, not
 * in the context. readErrorObservation.ts reads these forms back.
 */
export const defaultErrorObservation: ErrorObservation = ({ kind, message, tool, summary }) => {
  const what = summary ?? firstLine(message);
  switch (kind) {
    case 'parse':
      return `Error: bad call: ${what}`;
    case 'invalid_arguments':
      return `Error: ${tool ?? 'the tool'} arguments: ${what}`;
    case 'threw':
      return `Error: ${tool ?? 'the tool'} failed: ${what}`;
    default:
      return `Error: ${what}`;
  }
};
