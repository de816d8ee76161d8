import * as fs from 'node:fs';
import type { z } from 'zod';
import { parseWith, ProtocolError } from '../protocol/parse';

export interface JsonlRead<T> {
  records: T[];
  /** True when the last line was cut short (a crash mid-write) and was left out. */
  tornLastLine: boolean;
}

/**
 * Read a JSON-lines file whose every line must match `schema`. A last line without its
 * newline that does not parse is a write the process did not finish: it is dropped and
 * reported. Anything else that does not parse or validate is an error naming file and line.
 */
export function readJsonl<T extends z.ZodType>(file: string, schema: T): JsonlRead<z.infer<T>> {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const lines = text.split('\n');
  const complete = text.endsWith('\n') || text === '';
  const records: z.infer<T>[] = [];
  let tornLastLine = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') continue;
    const isLast = i === lines.length - 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      if (isLast && !complete) {
        tornLastLine = true;
        break;
      }
      throw new ProtocolError(`${file} line ${i + 1}: not valid JSON (${(error as Error).message})`);
    }
    records.push(parseWith(schema, value, `${file} line ${i + 1}`));
  }
  return { records, tornLastLine };
}

/** Append lines and make them durable before returning: a crash loses at most what follows. */
export function appendJsonl(file: string, values: readonly unknown[]): void {
  if (values.length === 0) return;
  const fd = fs.openSync(file, 'a');
  try {
    fs.writeSync(fd, values.map((v) => JSON.stringify(v)).join('\n') + '\n');
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Replace a file so that readers see the old or the new content, never a mix. */
export function writeFileAtomic(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}
