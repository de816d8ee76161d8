import * as fs from 'node:fs';
import type { z } from 'zod';
import { describeIssues } from '../../../contract/protocol/parse';

/**
 * Reads a JSON file of a model folder and validates it with `schema`. `makeError` builds the
 * module's own error type; every message starts with the file's path.
 */
export function readJsonFile<T extends z.ZodType>(
  file: string,
  schema: T,
  makeError: (message: string) => Error,
): z.infer<T> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw makeError(
      code === 'ENOENT' ? `${file}: file not found` : `${file}: cannot be read (${(error as Error).message})`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw makeError(`${file}: not valid JSON (${(error as Error).message})`);
  }
  const result = schema.safeParse(value);
  if (!result.success) throw makeError(`${file}: ${describeIssues(result.error.issues)}`);
  return result.data;
}
