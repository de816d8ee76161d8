import type { ChatMessage } from '../../../contract/protocol/chatMessages';
import type { ChatCompletionMessage, ChatFinishReason, OpenAIToolCall } from '../../../contract/protocol/openaiChat';
import type { GeneratedTurn } from '../../../foundations/models/generation/policy';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ParsedToolCall, ToolCallFormat } from '../formats/toolCallFormat';
import { definedFields } from '../../../contract/definedFields';

/**
 * A generated turn as Chat Completions answers it: the text the policy wrote, read by the model
 * family's tool-call format into `content` and `tool_calls` (vLLM's tool parsers do the same), the
 * thinking apart as `reasoning_content` (as vLLM and DeepSeek's API return it), and the finish
 * reason. The tokens stay the truth: this is only what the client is shown.
 */

export interface AssistantAnswer {
  /** The decoded turn (without an end-of-turn stop token; a request's stop string and what follows cut off). */
  text: string;
  /** How many of the turn's tokens the text covers (fewer than sampled when a request's stop string was cut). */
  textTokens: number;
  message: ChatCompletionMessage & { reasoning_content?: string };
  finishReason: ChatFinishReason;
  /** The calls as parsed, with the ids the answer gave them (in `message.tool_calls` order). */
  calls: { id: string; parsed: ParsedToolCall }[];
  /** The answer as the chat template's history shows it (our message form). */
  historyMessage: ChatMessage;
}

export interface AnswerOptions {
  tokenizer: Tokenizer;
  format: ToolCallFormat;
  /** Token ids that end a turn (end-of-turn, EOS): not part of the text. */
  endIds: ReadonlySet<number>;
  /** The request's stop strings: the text ends before the first one (OpenAI's rule). */
  stop: readonly string[];
  /** Makes the id of the k-th call of this answer. */
  callId: (k: number) => string;
}

/** Where the first of `stops` begins in `text`, or -1. */
function firstStop(text: string, stops: readonly string[]): number {
  let at = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  return at;
}

export function assistantAnswer(
  turn: Pick<GeneratedTurn, 'tokens' | 'finish'>,
  options: AnswerOptions,
): AssistantAnswer {
  const { tokens } = turn;
  const last = tokens[tokens.length - 1];
  const endsTurn = turn.finish === 'stop_token' && options.endIds.has(last);
  let textIds = endsTurn ? tokens.slice(0, -1) : tokens;
  let text = options.tokenizer.decode(textIds);
  let stopped = false;
  const cut = firstStop(text, options.stop);
  if (cut >= 0) {
    text = text.slice(0, cut);
    stopped = true;
    // The tokens the kept text comes from (a stop string may start inside a token: that token stays).
    while (textIds.length > 0 && options.tokenizer.decode(textIds.slice(0, -1)).length >= cut)
      textIds = textIds.slice(0, -1);
  }
  const parsed = turn.finish === 'length' && !stopped ? [] : options.format.parse(text);
  const history = options.format.assistantMessage(text, parsed);
  // The calls the history message carries (assistantMessage's rule): read, named, with object arguments.
  const readable = parsed.filter(
    (c) =>
      c.parseError === undefined &&
      c.name !== undefined &&
      typeof c.arguments === 'object' &&
      c.arguments !== null &&
      !Array.isArray(c.arguments),
  );
  const calls = readable.map((p, k) => ({ id: options.callId(k), parsed: p }));
  const toolCalls: OpenAIToolCall[] = calls.map(({ id, parsed: p }) => ({
    id,
    type: 'function',
    function: { name: p.name!, arguments: JSON.stringify(p.arguments ?? {}) },
  }));
  // The history message's content is the text without the readable calls; thinking goes apart.
  const content = history.role === 'assistant' ? history.content : text;
  const { reasoning, answerText } = splitReasoning(content);
  const finishReason: ChatFinishReason =
    turn.finish === 'length' && !stopped ? 'length' : toolCalls.length ? 'tool_calls' : 'stop';
  const message: AssistantAnswer['message'] = {
    role: 'assistant',
    content: answerText === '' && toolCalls.length ? null : answerText,
    refusal: null,
    ...definedFields({
      tool_calls: toolCalls.length ? toolCalls : undefined,
      reasoning_content: reasoning || undefined,
    }),
  };
  const historyMessage: ChatMessage =
    history.role === 'assistant' && history.tool_calls
      ? { ...history, tool_calls: history.tool_calls.map((c, k) => ({ ...c, id: calls[k]?.id ?? c.id })) }
      : history;
  return { text, textTokens: textIds.length, message, finishReason, calls, historyMessage };
}

/**
 * An answer that opens with `<think>` keeps its thinking apart (up to `</think>`, or all of it when
 * never closed), as vLLM's reasoning parsers return it; the rest is the content. Both trimmed, as
 * the stream sends them (streamDeltas.ts holds whitespace back until text follows it).
 */
export function splitReasoning(text: string): { reasoning: string; answerText: string } {
  const open = /^\s*<think>/.exec(text);
  if (!open) return { reasoning: '', answerText: text.trim() };
  const close = text.indexOf('</think>', open[0].length);
  const end = close >= 0 ? close : text.length;
  return {
    reasoning: text.slice(open[0].length, end).trim(),
    answerText: close >= 0 ? text.slice(close + '</think>'.length).trim() : '',
  };
}
