import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { ChatMessage, ToolSpec } from '../../../contract/protocol/chatMessages';
import type { ToolCallConstraint } from '../constraints/callConstraint';

/**
 * How a model writes tool calls in its turn text, and how such a turn goes back into the chat
 * history. Pluggable: Hermes/Qwen `<tool_call>` JSON (hermes.ts) and fenced code blocks run by a
 * code tool (codeBlock.ts) implement it; a model family with another convention adds a format,
 * not a change to the loop.
 */

/** One call found in a turn. Offsets are into the turn's text as `parse` received it. */
export interface ParsedToolCall {
  /** Character range [start, end) of the whole call, markers included; its last token carries the call's process reward. */
  start: number;
  end: number;
  /** The call as the policy wrote it (the JSON between the markers, the code of a block). */
  raw: string;
  name?: string | undefined;
  /** The arguments as written (validated later against the tool's schema). */
  arguments?: unknown | undefined;
  /** Set when the call could not be read; it becomes a `parse` error observation. */
  parseError?: string | undefined;
}

/** Extra conditions that end a generated turn besides the end-of-turn / EOS tokens. */
export interface StopConditions {
  tokenIds: number[];
  strings: string[];
}

export interface ToolCallFormat {
  readonly name: string;
  stopConditions(tokenizer: Tokenizer): StopConditions;
  /** Every call in a finished turn's text (the stop token not included), in order. */
  parse(text: string): ParsedToolCall[];
  /** The turn as a chat message for the template's view of the history. */
  assistantMessage(text: string, calls: readonly ParsedToolCall[]): ChatMessage;
  /**
   * The grammar that keeps sampled calls valid for these tools (schema-constrained decoding), for
   * formats whose calls are JSON between markers; absent for free-form formats (code blocks).
   */
  callConstraint?(tokenizer: Tokenizer, tools: readonly ToolSpec[]): ToolCallConstraint;
}

/**
 * Where a turn's answer part starts: after its thinking. Calls written while thinking are
 * drafts, not calls (vLLM's reasoning parser splits them off the same way). A turn that opens
 * `<think>` and never closes it is all thinking.
 */
export function contentStart(text: string): number {
  const close = text.lastIndexOf('</think>');
  if (close >= 0) return close + '</think>'.length;
  return text.includes('<think>') ? text.length : 0;
}
