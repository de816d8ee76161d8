import type { ChatTemplate } from '../models/chatTemplate';
import type { ChatMessage, ToolSpec } from '../shared/protocol/chatMessages';
import { describeRow, type DatasetRow } from '../data/row';
import { TextOffsets } from './textOffsets';
import type { TrajectoryTurn } from './trajectory';

export interface PromptOptions {
  template: ChatTemplate;
  tools: readonly ToolSpec[];
  /** Prepended as a system message to rows whose messages have none. */
  systemPrompt?: string;
  templateKwargs?: Record<string, unknown>;
}

export interface RenderedPrompt {
  messages: ChatMessage[];
  text: string;
  ids: number[];
  /** The prompt's messages as turns (the generation prompt belongs to the last one). */
  turns: TrajectoryTurn[];
}

/** The row's conversation with the configured system prompt, rendered and tokenised. */
export function renderPrompt(row: DatasetRow, options: PromptOptions): RenderedPrompt {
  const messages: ChatMessage[] =
    options.systemPrompt !== undefined && row.messages[0]?.role !== 'system'
      ? [{ role: 'system', content: options.systemPrompt }, ...row.messages]
      : [...row.messages];
  const render = { tools: options.tools, kwargs: options.templateKwargs };
  let prompt;
  try {
    prompt = options.template.promptTokens(messages, render);
  } catch (error) {
    throw new Error(`${describeRow(row)}: the chat template cannot render this row's prompt: ${(error as Error).message}`, { cause: error });
  }
  return { messages, text: prompt.text, ids: prompt.ids, turns: promptTurns(messages, prompt.text, prompt.ids, options) };
}

/**
 * Splits the prompt's tokens at message boundaries: message k ends where the rendering of the
 * first k messages ends. Templates may render a partial conversation's last message differently
 * (Qwen3 gives a final assistant message a thinking block that an earlier one does not get), so
 * when the partial rendering is not a prefix of the prompt, the boundary is found the way
 * `appendTokens` finds it: after as many end-of-turn tokens as the partial rendering has, plus
 * what follows its last one. Where neither works, or the template refuses a partial
 * conversation, the message is merged into the next turn rather than guessed at.
 */
function promptTurns(messages: readonly ChatMessage[], text: string, ids: readonly number[], options: PromptOptions): TrajectoryTurn[] {
  const offsets = new TextOffsets(options.template.tokenizer, ids);
  const turns: TrajectoryTurn[] = [];
  let start = 0;
  for (let k = 1; k <= messages.length; k++) {
    let end = ids.length;
    if (k < messages.length) {
      let partial: string | undefined;
      try {
        partial = options.template.render(messages.slice(0, k), { tools: options.tools, kwargs: options.templateKwargs, addGenerationPrompt: false });
      } catch {
        partial = undefined;
      }
      const boundary = partial === undefined ? undefined : messageBoundary(partial, text, options.template.endOfTurnToken);
      if (boundary === undefined) continue;
      end = boundary >= text.length ? ids.length : offsets.tokenAt(boundary);
    }
    if (end <= start) continue;
    turns.push({ index: turns.length, role: messages[k - 1].role, tokenStart: start, tokenEnd: end });
    start = end;
  }
  return turns;
}

/** Character offset in `full` where the part rendered as `partial` ends, or undefined. */
function messageBoundary(partial: string, full: string, endOfTurn: string): number | undefined {
  if (partial.length === 0) return undefined;
  if (full.startsWith(partial)) return partial.length;
  const closed = partial.split(endOfTurn).length - 1;
  if (closed === 0) return undefined;
  let at = -1;
  for (let i = 0; i < closed; i++) {
    at = full.indexOf(endOfTurn, at + 1);
    if (at < 0) return undefined;
  }
  const tail = partial.slice(partial.lastIndexOf(endOfTurn) + endOfTurn.length);
  const position = at + endOfTurn.length;
  return full.startsWith(tail, position) ? position + tail.length : undefined;
}

/** The last user message: what the task is, for lists and titles. */
export function taskText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i].content;
  return '';
}
