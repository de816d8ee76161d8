import * as fs from 'node:fs';
import * as path from 'node:path';
import type { z } from 'zod';
import { Demonstration } from '../../contract/protocol/demonstration';
import type { ChatMessage } from '../../contract/protocol/chatMessages';
import { DatasetError } from './dataset';
import type { RowSource } from './row';

/** What the loader needs of the config's tools: a name lookup and each tool's argument schema. */
export interface DemonstrationTools {
  readonly names: string[];
  get(name: string): { readonly parameters: z.ZodType } | undefined;
}

/** A demonstration as the warm start uses it, with the file and line it came from. */
export interface LoadedDemonstration {
  id?: string;
  messages: ChatMessage[];
  source: RowSource;
}

function issueLines(
  where: string,
  issues: readonly z.core.$ZodIssue[],
  prefix: (string | number | symbol)[] = [],
): string {
  return issues
    .map((issue) => `${where}: ${[...prefix, ...issue.path].map(String).join('.') || '(line)'}: ${issue.message}`)
    .join('\n');
}

/**
 * Reads a JSONL file of demonstrations (the format is documented at protocol/demonstration.ts).
 * Every error names the file, the line and the field — `sft.jsonl:12: messages.3.role: expected
 * a "tool" message …`. With `tools`, each call must name one of them and its arguments must
 * pass that tool's schema (`sft.jsonl:4: messages.2.tool_calls.0.function.arguments.expression:
 * Invalid input: expected string, received number`): a demonstration teaches the calls it shows.
 */
export async function loadDemonstrations(
  file: string,
  options: { tools?: DemonstrationTools } = {},
): Promise<LoadedDemonstration[]> {
  const origin = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(origin, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new DatasetError(
      code === 'ENOENT'
        ? `${origin}: demonstrations file not found`
        : `${origin}: cannot be read (${(error as Error).message})`,
    );
  }
  const demonstrations: LoadedDemonstration[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '') continue;
    const where = `${origin}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(lines[i]);
    } catch (error) {
      throw new DatasetError(`${where}: not valid JSON (${(error as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new DatasetError(`${where}: a demonstration must be a JSON object with "messages"`);
    const parsed = Demonstration.safeParse(value);
    if (!parsed.success) throw new DatasetError(issueLines(where, parsed.error.issues));
    const { id, messages } = parsed.data;
    if (options.tools) await checkCalls(where, messages, options.tools);
    demonstrations.push({
      ...(id !== undefined ? { id: String(id) } : {}),
      messages,
      source: { file: origin, line: i + 1 },
    });
  }
  if (demonstrations.length === 0) throw new DatasetError(`${origin}: the file has no demonstrations`);
  return demonstrations;
}

async function checkCalls(where: string, messages: readonly ChatMessage[], tools: DemonstrationTools): Promise<void> {
  for (const [k, message] of messages.entries()) {
    if (message.role !== 'assistant') continue;
    for (const [c, call] of (message.tool_calls ?? []).entries()) {
      const at = ['messages', k, 'tool_calls', c, 'function'];
      const tool = tools.get(call.function.name);
      if (!tool)
        throw new DatasetError(
          `${where}: ${[...at, 'name'].join('.')}: "${call.function.name}" is not one of the tools (${tools.names.join(', ') || 'none'})`,
        );
      let args: unknown = call.function.arguments;
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch (error) {
          throw new DatasetError(
            `${where}: ${[...at, 'arguments'].join('.')}: a string of arguments must be JSON (${(error as Error).message})`,
          );
        }
      }
      const checked = await tool.parameters.safeParseAsync(args);
      if (!checked.success) throw new DatasetError(issueLines(where, checked.error.issues, [...at, 'arguments']));
    }
  }
}
