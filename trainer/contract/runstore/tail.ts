import * as fs from 'node:fs';
import type { z } from 'zod';
import { parseWith } from '../protocol/parse';
import { duplicateMessage } from './recordKeys';

/** Where one record sits in its file, so it can be read again without keeping it in memory. */
export interface LineLocation {
  offset: number;
  length: number;
  /** 1-based line number, for error messages. */
  line: number;
}

export interface TailRead<T> {
  records: T[];
  locations: LineLocation[];
  /** Lines that were complete but did not parse or validate: each names file and line. */
  errors: string[];
  /** True when the file shrank or was replaced: everything read before is void. */
  restarted: boolean;
  /** True when the read stopped at its byte budget with more complete lines left to read. */
  more: boolean;
}

const CHUNK_BYTES = 4 << 20;

/**
 * Follows an append-only JSON-lines file of the run store: each `read()` returns the records
 * appended since the previous one. Only complete lines count: a last line without its newline
 * is a write in progress (or a crash's torn line) and is left for a later read. A complete
 * line that is not valid JSON or does not match `schema` is reported, by file and line, and
 * skipped, so one bad record does not hide the rest of a run.
 */
export class JsonlTail<T extends z.ZodType> {
  private offset = 0;
  private line = 0;
  private identity: string | undefined;
  /** Lines by record key, when records have one: a second record with a key already seen is reported, not taken. */
  private readonly keys = new Map<string, number>();

  constructor(
    readonly file: string,
    private readonly schema: T,
    private readonly options: { key?: (record: z.infer<T>) => string } = {},
  ) {}

  /** Bytes consumed so far: the end of the last complete line. */
  get position(): number {
    return this.offset;
  }

  /**
   * The records appended since the last read. `maxBytes` bounds the work of one call (it stops
   * after the first chunk that reaches it, at a line end): a large file can then be read a
   * part at a time, between other work.
   */
  read(maxBytes = Number.POSITIVE_INFINITY): TailRead<z.infer<T>> {
    const result: TailRead<z.infer<T>> = { records: [], locations: [], errors: [], restarted: false, more: false };
    let fd: number;
    try {
      fd = fs.openSync(this.file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return result;
      throw error;
    }
    try {
      const stat = fs.fstatSync(fd);
      const identity = `${stat.dev}:${stat.ino}`;
      if ((this.identity !== undefined && identity !== this.identity) || stat.size < this.offset) {
        this.offset = 0;
        this.line = 0;
        this.keys.clear();
        result.restarted = true;
      }
      this.identity = identity;
      let pending = Buffer.alloc(0);
      let pendingStart = this.offset;
      let position = this.offset;
      const budgetEnd = this.offset + maxBytes;
      while (position < stat.size) {
        if (pendingStart >= budgetEnd) {
          result.more = true;
          break;
        }
        const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, maxBytes, stat.size - position));
        const got = fs.readSync(fd, chunk, 0, chunk.length, position);
        if (got === 0) break;
        position += got;
        const data = pending.length ? Buffer.concat([pending, chunk.subarray(0, got)]) : chunk.subarray(0, got);
        let start = 0;
        for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
          this.line++;
          this.take(data.subarray(start, nl), pendingStart + start, result);
          start = nl + 1;
        }
        pendingStart += start;
        pending = Buffer.from(data.subarray(start));
      }
      this.offset = pendingStart;
      return result;
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Read one record again from where an earlier `read()` found it, validated with `schema`
   * (by default the tail's own; a reader that follows with a partial schema reads the whole
   * record this way).
   */
  readAt<S extends z.ZodType = T>(location: LineLocation, schema?: S): z.infer<S> {
    const fd = fs.openSync(this.file, 'r');
    try {
      const buffer = Buffer.alloc(location.length);
      fs.readSync(fd, buffer, 0, location.length, location.offset);
      return this.parse(buffer, location.line, schema ?? this.schema) as z.infer<S>;
    } finally {
      fs.closeSync(fd);
    }
  }

  private take(bytes: Buffer, offset: number, result: TailRead<z.infer<T>>): void {
    if (bytes.length === 0 || /^\s*$/.test(bytes.toString('utf8'))) return;
    try {
      const record = this.parse(bytes, this.line) as z.infer<T>;
      if (this.options.key) {
        const key = this.options.key(record);
        const first = this.keys.get(key);
        if (first !== undefined) {
          result.errors.push(duplicateMessage(this.file, key, this.line, first));
          return;
        }
        this.keys.set(key, this.line);
      }
      result.records.push(record);
      result.locations.push({ offset, length: bytes.length, line: this.line });
    } catch (error) {
      result.errors.push((error as Error).message);
    }
  }

  private parse(bytes: Buffer, line: number, schema: z.ZodType = this.schema): unknown {
    const where = `${this.file} line ${line}`;
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw new Error(`${where}: not valid JSON (${(error as Error).message})`, { cause: error });
    }
    return parseWith(schema, value, where);
  }
}
