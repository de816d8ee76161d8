import * as fs from 'node:fs';
import { z } from 'zod';
import type { ChatTemplate } from '../models/chatTemplate';
import { ChatMessage, type ToolSpec } from '../shared/protocol/chatMessages';
import { describeIssues } from '../shared/protocol/parse';
import { DemonstrationError, tokenizeDemonstration, type DemonstrationTokens } from './demonstration';

/** A demonstration row: a conversation whose assistant turns are the ones to learn (calls as `tool_calls`, results as `tool` messages). */
export const DemonstrationRow = z.looseObject({ messages: z.array(ChatMessage).min(2) });

/**
 * A JSONL file of demonstrations as token sequences, each laid out as the agent loop lays out a
 * rollout (tokenizeDemonstration). Errors name the file, the line and the field.
 */
export function readDemonstrationFile(file: string, template: ChatTemplate, options: { tools?: readonly ToolSpec[]; kwargs?: Record<string, unknown> } = {}): DemonstrationTokens[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const out: DemonstrationTokens[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    const where = `${file} line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new DemonstrationError(`${where}: not valid JSON (${(error as Error).message})`);
    }
    const parsed = DemonstrationRow.safeParse(value);
    if (!parsed.success) throw new DemonstrationError(`${where}: ${describeIssues(parsed.error.issues)}`);
    out.push(tokenizeDemonstration(template, parsed.data.messages, { ...options, origin: where }));
  });
  return out;
}
