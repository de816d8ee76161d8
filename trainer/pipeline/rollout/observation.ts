import { observationText } from '../../foundations/tools/result';
import type { ToolRunOutcome } from '../../foundations/tools/runner';
import { definedFields } from '../../contract/definedFields';
import type { ErrorObservation, ObservedError } from './errorObservation';

/**
 * What the policy is shown for a call, before truncation: the result's text, or the error
 * observation of a call that failed. The agent loop and the demonstration generator
 * (demonstrate.ts) both render calls here, so a demonstration shows exactly what a rollout would.
 */
export function renderObservation(
  outcome: Pick<ToolRunOutcome, 'result' | 'error'>,
  tool: string | undefined,
  errorObservation: ErrorObservation,
): string {
  if (outcome.error) {
    const error: ObservedError = { ...outcome.error, ...definedFields({ tool }) };
    return errorObservation(error);
  }
  return observationText(outcome.result!);
}
