import './zodConfig';
import type { z } from 'zod';
import { parseWith } from '../trainer/contract/protocol/parse';

/** Validate a message from the extension host; the error names the field. */
export function receive<T extends z.ZodType>(
  schema: T,
  data: unknown,
  what = 'message from the extension',
): z.infer<T> {
  return parseWith(schema, data, what);
}
