import { describeThrown } from '../../foundations/tools/runner';
import type { ThrownValue } from './toolWorkerMessages';

/** A value thrown in a worker, as it can cross to the trainer: an Error keeps its name, message and stack. */
export function thrown(error: unknown): ThrownValue {
  try {
    if (error instanceof Error)
      return {
        name: String(error.name),
        message: String(error.message),
        ...(typeof error.stack === 'string' ? { stack: error.stack } : {}),
      };
  } catch {
    // A hostile Error-like value: described below.
  }
  return { description: describeThrown(error) };
}

/** A thrown value from a worker as an Error the trainer describes exactly as it would have on its own thread. */
export function rethrown(value: ThrownValue): Error {
  if ('description' in value) {
    const error = new Error(value.description);
    error.stack = value.description;
    return error;
  }
  const error = new Error(value.message);
  error.name = value.name;
  if (value.stack !== undefined) error.stack = value.stack;
  return error;
}
