import * as fs from 'node:fs';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { contentImages, contentText, type ChatMessage } from '../../contract/protocol/chatMessages';
import type { DatasetRow } from '../../foundations/data/row';

/**
 * A dataset as verl's RLHF dataset reads it (verl/utils/dataset/rl_dataset.py, RLHFDataset, and
 * the layout of examples/data_preprocess/gsm8k_tool_agent_loop.py): one Parquet row per dataset
 * row with
 *
 *   data_source   the config's name (verl groups validation metrics by it; `data.reward_fn_key`)
 *   agent_name    "tool_agent": verl's ToolAgentLoop runs the episode (tools from the tool config)
 *   prompt        the chat messages to continue (`data.prompt_key`), the config's system prompt
 *                 put first when the row has none, as our loop does
 *   ability       "agent"
 *   reward_model  { style: "rule", ground_truth }: the row's `answer` when it is a string, else
 *                 its own fields as JSON (verl hands it to the reward function and dumps it as `gts`)
 *   extra_info    { split, index, row_id, row }: `row` is the row as JSON, `id` set — the reward
 *                 function sends it to serve-tools, and the importer finds the row again by `row_id`
 */

export interface VerlRow {
  data_source: string;
  agent_name: string;
  prompt: { role: string; content: string }[];
  ability: string;
  reward_model: { style: string; ground_truth: string };
  extra_info: { split: string; index: bigint; row_id: string; row: string };
}

const text = (name: string) => ({
  name,
  type: 'BYTE_ARRAY' as const,
  converted_type: 'UTF8' as const,
  repetition_type: 'REQUIRED' as const,
});

/** The Parquet schema, written out: nested columns need it (a 3-level LIST of STRUCTs, and STRUCTs). */
const SCHEMA = [
  { name: 'root', num_children: 6 },
  text('data_source'),
  text('agent_name'),
  { name: 'prompt', repetition_type: 'REQUIRED' as const, converted_type: 'LIST' as const, num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
  { name: 'element', repetition_type: 'REQUIRED' as const, num_children: 2 },
  text('role'),
  text('content'),
  text('ability'),
  { name: 'reward_model', repetition_type: 'REQUIRED' as const, num_children: 2 },
  text('style'),
  text('ground_truth'),
  { name: 'extra_info', repetition_type: 'REQUIRED' as const, num_children: 4 },
  text('split'),
  { name: 'index', type: 'INT64' as const, repetition_type: 'REQUIRED' as const },
  text('row_id'),
  text('row'),
];

/** The row's own fields (what the rewards read), without the parts every row has. */
function ownFields(row: DatasetRow): Record<string, unknown> {
  const { id: _id, messages: _m, toolArgs: _t, source: _s, ...fields } = row;
  return fields;
}

/** The row as it would be written in a dataset file: its fields, `id`, `messages` and `toolArgs` (no `source`). */
export function rowJson(row: DatasetRow): string {
  const { source: _source, ...written } = row;
  return JSON.stringify(written);
}

function promptMessages(row: DatasetRow, systemPrompt: string | undefined): { role: string; content: string }[] {
  const messages: ChatMessage[] =
    systemPrompt !== undefined && row.messages[0]?.role !== 'system'
      ? [{ role: 'system', content: systemPrompt }, ...row.messages]
      : row.messages;
  return messages.map((m, k) => {
    // verl's multimodal rows carry images in a column of their own; exporting them is not built yet.
    if (contentImages(m.content).length)
      throw new Error(`row ${row.id}: message ${k} holds an image; exporting image rows to verl is not supported yet`);
    return { role: m.role, content: contentText(m.content) };
  });
}

export function toVerlRows(
  rows: readonly DatasetRow[],
  options: { dataSource: string; split: string; systemPrompt?: string },
): VerlRow[] {
  return rows.map((row, i) => {
    const fields = ownFields(row);
    const answer = fields['answer'];
    return {
      data_source: options.dataSource,
      agent_name: 'tool_agent',
      prompt: promptMessages(row, options.systemPrompt),
      ability: 'agent',
      reward_model: { style: 'rule', ground_truth: typeof answer === 'string' ? answer : JSON.stringify(fields) },
      extra_info: { split: options.split, index: BigInt(i), row_id: row.id, row: rowJson(row) },
    };
  });
}

export function writeVerlParquet(file: string, rows: readonly VerlRow[]): void {
  const columns = ['data_source', 'agent_name', 'prompt', 'ability', 'reward_model', 'extra_info'] as const;
  const buffer = parquetWriteBuffer({
    schema: SCHEMA,
    columnData: columns.map((name) => ({ name, data: rows.map((r) => r[name]) })),
    kvMetadata: [{ key: 'created_by', value: 'rollout-studio export verl' }],
  });
  fs.writeFileSync(file, Buffer.from(buffer));
}
