import * as fs from 'node:fs';
import type { z } from 'zod';
import { parseWith, ProtocolError } from '../protocol/parse';
import { shortWriteError, storageError } from './storageError';

export interface JsonlRead<T> {
  records: T[];
  /** True when the last line was cut short (a crash mid-write) and was left out. */
  tornLastLine: boolean;
  /** The 1-based line number of each record. */
  lines: number[];
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
  const numbers: number[] = [];
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
    numbers.push(i + 1);
  }
  return { records, tornLastLine, lines: numbers };
}

/**
 * Write all of `data` at the file position (`O_APPEND`: the end). `writeSync` may take fewer
 * bytes than it was given (a full disk, a signal, a network file system); the rest is written
 * again, and a device that takes nothing more is an error, not a silently cut record.
 */
function writeAll(fd: number, data: Buffer, file: string): void {
  let written = 0;
  while (written < data.length) {
    const n = fs.writeSync(fd, data, written, data.length - written);
    if (n <= 0) throw shortWriteError(file, written, data.length);
    written += n;
  }
}

/**
 * Append lines and make them durable before returning: a crash loses at most what follows. A
 * write that fails is taken back whole (the file is cut to its size before it), so a failed
 * record never leaves half a line for the next one to be glued to; the error names the file and
 * what to do.
 */
export function appendJsonl(file: string, values: readonly unknown[]): void {
  if (values.length === 0) return;
  const data = Buffer.from(values.map((v) => JSON.stringify(v)).join('\n') + '\n', 'utf8');
  let fd: number;
  try {
    fd = fs.openSync(file, 'a');
  } catch (error) {
    throw storageError(error, file, 'opening the file to append');
  }
  let sizeBefore = -1;
  try {
    sizeBefore = fs.fstatSync(fd).size;
    writeAll(fd, data, file);
    fs.fsyncSync(fd);
  } catch (error) {
    if (sizeBefore >= 0) {
      try {
        fs.ftruncateSync(fd, sizeBefore);
      } catch {
        // Cannot take it back: the reader drops a torn last line, and the resume repairs the file.
      }
    }
    throw storageError(error, file, 'appending a record');
  } finally {
    fs.closeSync(fd);
  }
}

/** Replace a file so that readers see the old or the new content, never a mix. */
export function writeFileAtomic(file: string, content: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'w');
    try {
      writeAll(
        fd,
        typeof content === 'string'
          ? Buffer.from(content, 'utf8')
          : Buffer.from(content.buffer, content.byteOffset, content.byteLength),
        file,
      );
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, file);
  } catch (error) {
    try {
      fs.rmSync(tmp, { force: true });
    } catch {
      // The folder itself refuses: the error below says so.
    }
    throw storageError(error, file, 'writing the file');
  }
}
