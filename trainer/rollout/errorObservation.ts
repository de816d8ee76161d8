import type { ToolErrorKind } from '../shared/protocol/runStore';

export interface ObservedError {
  kind: ToolErrorKind;
  /** The full message as recorded (a thrown error's stack included). */
  message: string;
  /** The tool, when the call got far enough to name one. */
  tool?: string;
}

/** The text the policy sees in place of a result when a call fails. Configurable per run. */
export type ErrorObservation = (error: ObservedError) => string;

function firstLine(text: string): string {
  return text.split('\n', 1)[0];
}

/** Short, one line, says what to fix; stack traces stay in the record, not in the context. */
export const defaultErrorObservation: ErrorObservation = ({ kind, message, tool }) => {
  switch (kind) {
    case 'parse':
      return `Error: the tool call could not be read: ${firstLine(message)}`;
    case 'threw':
      return `Error: ${tool ?? 'the tool'} failed: ${firstLine(message)}`;
    default:
      return `Error: ${firstLine(message)}`;
  }
};
