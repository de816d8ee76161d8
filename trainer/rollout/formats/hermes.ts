import type { Tokenizer } from '../../models/tokenizer';
import type { ChatMessage, ToolCallMessagePart, ToolSpec } from '../../shared/protocol/chatMessages';
import { ToolCallConstraint } from '../constraints/callConstraint';
import { contentStart, type ParsedToolCall, type StopConditions, type ToolCallFormat } from './toolCallFormat';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

export interface HermesFormatOptions {
  /**
   * End the turn at the first `</tool_call>` (one call per turn, as Search-R1-style loops do)
   * instead of at the end-of-turn token (several calls per turn, run in parallel). The loop then
   * appends the end-of-turn token itself, as template text (mask 0).
   */
  stopAtCallEnd?: boolean;
}

/**
 * Hermes / Qwen tool calls: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, any
 * number per turn, written after the thinking. A block that is not closed, is not JSON, or has
 * no string `name` is a parse failure; `arguments` given as a JSON string (OpenAI style) is
 * decoded; anything else is passed on and the tool's schema judges it.
 */
export class HermesFormat implements ToolCallFormat {
  readonly name = 'hermes';
  constructor(private readonly options: HermesFormatOptions = {}) {}

  stopConditions(tokenizer: Tokenizer): StopConditions {
    if (!this.options.stopAtCallEnd) return { tokenIds: [], strings: [] };
    const id = tokenizer.findTokenId(CLOSE);
    return id === undefined ? { tokenIds: [], strings: [CLOSE] } : { tokenIds: [id], strings: [] };
  }

  callConstraint(tokenizer: Tokenizer, tools: readonly ToolSpec[]): ToolCallConstraint {
    return new ToolCallConstraint(tokenizer, tools, { open: OPEN, close: CLOSE });
  }

  parse(text: string): ParsedToolCall[] {
    const calls: ParsedToolCall[] = [];
    let at = text.indexOf(OPEN, contentStart(text));
    while (at >= 0) {
      const bodyStart = at + OPEN.length;
      const close = text.indexOf(CLOSE, bodyStart);
      const nextOpen = text.indexOf(OPEN, bodyStart);
      if (close < 0 || (nextOpen >= 0 && nextOpen < close)) {
        const end = nextOpen >= 0 ? nextOpen : text.length;
        calls.push({ start: at, end, raw: text.slice(bodyStart, end).trim(), parseError: `the tool call is not closed with ${CLOSE}` });
        at = nextOpen;
        continue;
      }
      const end = close + CLOSE.length;
      calls.push({ start: at, end, ...readCall(text.slice(bodyStart, close).trim()) });
      at = text.indexOf(OPEN, end);
    }
    return calls;
  }

  assistantMessage(text: string, calls: readonly ParsedToolCall[]): ChatMessage {
    // Readable calls go into `tool_calls` as the template expects them; the text between them
    // (and unreadable blocks, verbatim) stays the content.
    const toolCalls: ToolCallMessagePart[] = [];
    let content = '';
    let from = 0;
    for (const call of calls) {
      if (call.parseError !== undefined || call.name === undefined || !isPlainObject(call.arguments)) continue;
      content += text.slice(from, call.start);
      from = call.end;
      toolCalls.push({ type: 'function', function: { name: call.name, arguments: call.arguments } });
    }
    content = (content + text.slice(from)).trim();
    return toolCalls.length ? { role: 'assistant', content, tool_calls: toolCalls } : { role: 'assistant', content };
  }
}

function readCall(raw: string): Omit<ParsedToolCall, 'start' | 'end'> {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { raw, parseError: `the tool call is not valid JSON (${(error as Error).message})` };
  }
  if (!isPlainObject(value)) return { raw, parseError: 'the tool call must be a JSON object {"name": …, "arguments": {…}}' };
  const name = value['name'];
  if (typeof name !== 'string' || name === '') return { raw, parseError: 'the tool call has no "name" string' };
  let args = value['arguments'] ?? value['parameters'] ?? {};
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      // Leave the string: the schema check reports that an object was expected.
    }
  }
  return { raw, name, arguments: args };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
