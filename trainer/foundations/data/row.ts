import type { ChatMessage } from '../../contract/protocol/chatMessages';

/** Where a dataset row came from, so every error about it can name the file and line. */
export interface RowSource {
  file: string;
  /** 1-based line in a JSONL file, or 1-based position in an in-memory list. */
  line: number;
}

/**
 * A dataset row as the agent loop, the tools and the rewards see it: the row's own fields
 * (the ground truth the rewards read: `answer`, `neededDocs`, …) plus the normalised parts
 * every row has. `Fields` is the output type of the zod schema the dataset was loaded with.
 */
export type DatasetRow<Fields extends object = Record<string, unknown>> = Fields & {
  /** The row's `id`, or `<file name>:<line>` when it has none. */
  id: string;
  /** The conversation to continue: the row's `messages`, or its `system` + `prompt` as messages. */
  messages: ChatMessage[];
  /** Per-row arguments for tools, by tool name (the row's `toolArgs`; `{}` when absent). */
  toolArgs: Record<string, Record<string, unknown>>;
  source: RowSource;
};

/** "train.jsonl:12 (row q-00012)": how errors name a row. */
export function describeRow(row: Pick<DatasetRow, 'id' | 'source'>): string {
  const where = `${row.source.file}:${row.source.line}`;
  return row.id === defaultRowId(row.source) ? where : `${where} (row ${row.id})`;
}

export function defaultRowId(source: RowSource): string {
  const base = source.file.split(/[\\/]/).pop() ?? source.file;
  return `${base}:${source.line}`;
}
