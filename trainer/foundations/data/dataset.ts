import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { ChatMessage } from '../../contract/protocol/chatMessages';
import { defaultRowId, type DatasetRow, type RowSource } from './row';

/**
 * JSONL datasets. Each line is one row: the conversation to continue, given either as
 * `messages` (chat messages, the last one from the user) or as `prompt` (with an optional
 * `system`); an optional `id`; optional `toolArgs` (per-row arguments for tools, by tool name);
 * and the fields the rewards read (`answer`, `answers`, `neededDocs`, …), validated by the zod
 * object schema the caller passes as `fields`. Fields the schema does not name are kept as
 * they are.
 *
 * Every error names the file, the line and the field: `train.jsonl:12: answer: Invalid input:
 * expected string, received number`.
 */

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

const RESERVED = ['id', 'prompt', 'system', 'messages', 'toolArgs', 'source'] as const;

const BaseRow = z.object({
  id: z.union([z.string().min(1), z.number().int()]).optional(),
  prompt: z.string().min(1).optional(),
  system: z.string().optional(),
  messages: z.array(ChatMessage).min(1).optional(),
  toolArgs: z.record(z.string(), z.record(z.string(), z.unknown())).optional(),
});

/** Any zod object schema for the row's own fields. */
export type FieldsSchema = z.ZodObject<z.core.$ZodLooseShape, z.core.$ZodObjectConfig>;

export interface Dataset<Fields extends object = Record<string, unknown>> {
  /** The file (or in-memory origin) the rows came from. */
  origin: string;
  rows: DatasetRow<Fields>[];
}

export interface DatasetOptions<S extends FieldsSchema> {
  /** The row's own fields (the ground truth the rewards read), e.g. z.object({ answer: z.string() }). */
  fields?: S;
}

type RowsOf<S extends FieldsSchema | undefined> = S extends FieldsSchema ? z.output<S> : Record<string, unknown>;

function issueText(where: string, issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => `${where}: ${issue.path.length ? issue.path.join('.') : '(row)'}: ${issue.message}`)
    .join('\n');
}

function rowSchema(fields: FieldsSchema | undefined): z.ZodType {
  if (!fields) return BaseRow.loose();
  const clash = Object.keys(fields.shape).filter((key) => (RESERVED as readonly string[]).includes(key));
  if (clash.length)
    throw new DatasetError(
      `dataset fields schema: ${clash.map((k) => `"${k}"`).join(', ')} is a field every row has already; rename it`,
    );
  return BaseRow.extend(fields.shape).loose();
}

/** Validates one parsed row; `source` names it in errors. */
function readRow(value: unknown, schema: z.ZodType, source: RowSource): DatasetRow {
  const where = `${source.file}:${source.line}`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DatasetError(`${where}: a row must be a JSON object`);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new DatasetError(issueText(where, parsed.error.issues));
  const { id, prompt, system, messages, toolArgs, ...fields } = parsed.data as z.output<typeof BaseRow> &
    Record<string, unknown>;
  if ((prompt === undefined) === (messages === undefined)) {
    throw new DatasetError(
      `${where}: a row needs exactly one of "prompt" (a string) or "messages" (chat messages)${prompt !== undefined ? ', not both' : ''}`,
    );
  }
  if (messages !== undefined && system !== undefined) {
    throw new DatasetError(`${where}: system: with "messages", put the system message in the messages`);
  }
  const conversation: ChatMessage[] = messages ?? [
    ...(system !== undefined ? [{ role: 'system' as const, content: system }] : []),
    { role: 'user', content: prompt! },
  ];
  const last = conversation[conversation.length - 1];
  if (last.role !== 'user') {
    throw new DatasetError(
      `${where}: messages.${conversation.length - 1}.role: the last message must be from the user (the policy answers it), got "${last.role}"`,
    );
  }
  return {
    ...fields,
    id: id === undefined ? defaultRowId(source) : String(id),
    messages: conversation,
    toolArgs: toolArgs ?? {},
    source,
  };
}

function checkUniqueIds(rows: readonly DatasetRow[]): void {
  const seen = new Map<string, RowSource>();
  for (const row of rows) {
    const first = seen.get(row.id);
    if (first)
      throw new DatasetError(
        `${row.source.file}:${row.source.line}: id: "${row.id}" is already used at line ${first.line}`,
      );
    seen.set(row.id, row.source);
  }
}

function readDatasetFile(origin: string): Buffer {
  try {
    return fs.readFileSync(origin);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new DatasetError(
      code === 'ENOENT'
        ? `${origin}: dataset file not found`
        : code === 'ERR_FS_FILE_TOO_LARGE'
          ? `${origin}: the file is larger than Node reads at once (2 GiB); split the rows into several files`
          : `${origin}: cannot be read (${(error as Error).message})`,
    );
  }
}

/**
 * Each line of the file's bytes, decoded one at a time: a file past V8's longest string (about
 * 512 MB) reads as well as a small one (decoding it whole fails with "Cannot create a string
 * longer than …").
 */
function forEachLine(bytes: Buffer, visit: (line: string, index: number) => void): void {
  for (let start = 0, index = 0; start <= bytes.length; index++) {
    const newline = bytes.indexOf(0x0a, start);
    const end = newline < 0 ? bytes.length : newline;
    visit(bytes.toString('utf8', start, end), index);
    start = end + 1;
  }
}

/** Reads and validates a JSONL dataset. Blank lines are skipped; anything else must be a valid row. */
export function loadJsonlDataset<S extends FieldsSchema | undefined = undefined>(
  file: string,
  options: { fields?: S } = {},
): Dataset<RowsOf<S>> {
  const origin = path.resolve(file);
  const schema = rowSchema(options.fields);
  const rows: DatasetRow[] = [];
  forEachLine(readDatasetFile(origin), (line, i) => {
    if (line.trim() === '') return;
    const source = { file: origin, line: i + 1 };
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DatasetError(`${origin}:${i + 1}: not valid JSON (${(error as Error).message})`);
    }
    rows.push(readRow(value, schema, source));
  });
  if (rows.length === 0) throw new DatasetError(`${origin}: the dataset has no rows`);
  checkUniqueIds(rows);
  return { origin, rows: rows as DatasetRow<RowsOf<S>>[] };
}

/** A dataset from rows already in memory (a generator's output, a test); `origin` names it in errors. */
export function datasetFromRows<S extends FieldsSchema | undefined = undefined>(
  origin: string,
  values: readonly unknown[],
  options: { fields?: S } = {},
): Dataset<RowsOf<S>> {
  const schema = rowSchema(options.fields);
  const rows = values.map((value, i) => readRow(value, schema, { file: origin, line: i + 1 }));
  if (rows.length === 0) throw new DatasetError(`${origin}: the dataset has no rows`);
  checkUniqueIds(rows);
  return { origin, rows: rows as DatasetRow<RowsOf<S>>[] };
}

/** Writes rows as JSONL (one JSON object per line), creating the folder. For dataset generators. */
export function writeJsonl(file: string, rows: readonly unknown[]): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + (rows.length ? '\n' : ''));
}
