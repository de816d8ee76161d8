import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ChatMessage, ToolCallMessagePart, ToolSpec } from '../../../contract/protocol/chatMessages';
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
    // The first closer at or after the current body, kept while it still is: looking it up again
    // for every opener would scan the text once per opener (quadratic on openers without closers).
    let close: number | undefined;
    while (at >= 0) {
      const bodyStart = at + OPEN.length;
      if (close === undefined || (close >= 0 && close < bodyStart)) close = text.indexOf(CLOSE, bodyStart);
      const nextOpen = text.indexOf(OPEN, bodyStart);
      if (close < 0 || (nextOpen >= 0 && nextOpen < close)) {
        const end = nextOpen >= 0 ? nextOpen : text.length;
        calls.push({ start: at, end, raw: text.slice(bodyStart, end).trim(), parseError: `not closed with ${CLOSE}` });
        at = nextOpen;
        continue;
      }
      const end = close + CLOSE.length;
      calls.push({ start: at, end, ...readCall(text.slice(bodyStart, close).trim()) });
      at = nextOpen >= 0 ? nextOpen : -1;
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
  // A failed parse's stack is never read, and capturing it is most of what a throw costs: a turn
  // (or a /reward body) of 100,000 unreadable calls reads in half the time without it.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    return { raw, parseError: `not valid JSON ${whereJsonFails(raw, error as Error)}` };
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  if (!isPlainObject(value)) return { raw, parseError: 'not a JSON object {"name": …, "arguments": {…}}' };
  const name = value['name'];
  if (typeof name !== 'string' || name === '') return { raw, parseError: 'no "name" string' };
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

/**
 * Where JSON.parse gave up, as the policy can see it: `at "fm", "to"` (the text from there, a few
 * characters), or `(it ends early)`. V8 says `… in JSON at position N` or `Unexpected token 'x'`.
 */
export function whereJsonFails(raw: string, error: Error): string {
  if (/Unexpected end of JSON input/.test(error.message)) return '(it ends early)';
  const at = jsonErrorPosition(raw, error.message);
  if (at < 0 || at >= raw.length) return '(it ends early)';
  const excerpt = raw.slice(at, at + 12);
  return `at ${JSON.stringify(excerpt)}${at + 12 < raw.length ? '…' : ''}`;
}

function jsonErrorPosition(raw: string, message: string): number {
  const position = /at position (\d+)/.exec(message);
  if (position) return Number(position[1]);
  const token = /^Unexpected token '(.)', (\.\.\.)?"([\s\S]*?)"(\.\.\.)? is not valid JSON$/.exec(message);
  if (!token) return -1;
  // V8 quotes the source around the error: ten characters either side, "..." where it cut.
  if (token[2]) {
    const context = raw.indexOf(token[3]);
    if (context >= 0) return context + 10;
  }
  return raw.indexOf(token[1]);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
