import type { ChatTemplate } from '../../foundations/models/text/chatTemplate';
import { contentText, type ChatMessage, type ToolSpec } from '../../contract/protocol/chatMessages';
import { describeRow, type DatasetRow } from '../../foundations/data/row';
import type { PreparedImage } from '../../foundations/models/vision/preprocess';
import { expandImageText } from './images';
import { TextOffsets } from './textOffsets';
import type { TrajectoryTurn } from './trajectory';

export interface PromptOptions {
  template: ChatTemplate;
  tools: readonly ToolSpec[];
  /** Prepended as a system message to rows whose messages have none. */
  systemPrompt?: string | undefined;
  templateKwargs?: Record<string, unknown> | undefined;
  /** Vision-language models: the row's images (in order), each placeholder expanded to one token per merged patch. */
  images?: { list: readonly PreparedImage[]; placeholder: string } | undefined;
}

export interface RenderedPrompt {
  messages: ChatMessage[];
  text: string;
  ids: number[];
  /** The prompt's messages as turns (the generation prompt belongs to the last one). */
  turns: TrajectoryTurn[];
  /** The images of the prompt's image token runs, in order. */
  images: PreparedImage[];
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
    throw new Error(
      `${describeRow(row)}: the chat template cannot render this row's prompt: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const images = options.images?.list ?? [];
  if (images.length) {
    // The processor's expansion: each placeholder becomes one token per merged patch of its image.
    const text = expandImageText(prompt.text, images, options.images!.placeholder);
    const ids = options.template.tokenizer.encode(text);
    const rendered = ids.filter((id) => id === options.template.tokenizer.tokenId(options.images!.placeholder)).length;
    const expected = images.reduce((n, im) => n + im.tokens, 0);
    if (rendered !== expected) {
      throw new Error(
        `${describeRow(row)}: the chat template rendered ${prompt.text.split(options.images!.placeholder).length - 1} image placeholder(s) for the row's ${images.length} image(s); it must render each image part as <|vision_start|><|image_pad|><|vision_end|> (a vision-language template)`,
      );
    }
    prompt = { text, ids };
  }
  return {
    messages,
    text: prompt.text,
    ids: prompt.ids,
    turns: promptTurns(messages, prompt.text, prompt.ids, options),
    images: [...images],
  };
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
function promptTurns(
  messages: readonly ChatMessage[],
  text: string,
  ids: readonly number[],
  options: PromptOptions,
): TrajectoryTurn[] {
  const offsets = new TextOffsets(options.template.tokenizer, ids);
  const turns: TrajectoryTurn[] = [];
  let start = 0;
  for (let k = 1; k <= messages.length; k++) {
    let end = ids.length;
    if (k < messages.length) {
      let partial: string | undefined;
      try {
        partial = options.template.render(messages.slice(0, k), {
          tools: options.tools,
          kwargs: options.templateKwargs,
          addGenerationPrompt: false,
        });
        if (options.images?.list.length)
          partial = expandImageText(partial, options.images.list, options.images.placeholder);
      } catch {
        partial = undefined;
      }
      const boundary =
        partial === undefined ? undefined : messageBoundary(partial, text, options.template.endOfTurnToken);
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
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i].role === 'user') return contentText(messages[i].content);
  return '';
}
