import type { ChatTemplate } from '../../foundations/models/text/chatTemplate';
import type { ChatMessage, ToolSpec } from '../../contract/protocol/chatMessages';
import type { PreparedImage } from '../../foundations/models/vision/preprocess';
import { expandImageTokens } from './images';

/**
 * A demonstration conversation (for the SFT warm start) as tokens and an assistant mask, laid
 * out exactly as the agent loop lays out a rollout in which the policy wrote those assistant
 * turns: the prompt rendered with the generation prompt; each assistant turn as the template
 * renders a final assistant message, after that header, through its end-of-turn token (mask 1);
 * tool results appended with `appendTokens` after the end-of-turn token (mask 0), keeping the
 * tokens when the template rewrites history. So the warm start teaches the very token sequence
 * RL will sample and train on — not a re-rendering of the whole conversation, which for Qwen3
 * differs (earlier turns lose their empty thinking blocks).
 */

export interface DemonstrationTokens {
  ids: number[];
  /** 1 on the assistant's tokens (their end-of-turn token included). */
  mask: Uint8Array;
  /** Per token, the number of the assistant turn it belongs to, from 1 (0 on prompt and tool tokens). */
  turns: Uint16Array;
  /** Per assistant turn, in order: whether it makes tool calls. */
  callTurns: boolean[];
}

export interface DemonstrationOptions {
  tools?: readonly ToolSpec[] | undefined;
  kwargs?: Record<string, unknown> | undefined;
  /** Where the conversation came from, for errors ("sft.jsonl:12"). */
  origin?: string | undefined;
  /**
   * Vision-language models: the images of the conversation's image parts in order, and the
   * placeholder token the template writes once per image (expanded here to one per merged patch).
   */
  images?: { list: readonly PreparedImage[]; imageTokenId: number } | undefined;
}

export class DemonstrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DemonstrationError';
  }
}

export function tokenizeDemonstration(
  template: ChatTemplate,
  messages: readonly ChatMessage[],
  options: DemonstrationOptions = {},
): DemonstrationTokens {
  const where = options.origin ?? 'demonstration';
  const render = { tools: options.tools, kwargs: options.kwargs };
  const firstAssistant = messages.findIndex((m) => m.role === 'assistant');
  if (firstAssistant <= 0)
    throw new DemonstrationError(`${where}: expected prompt messages followed by an assistant message`);
  if (messages[messages.length - 1].role !== 'assistant')
    throw new DemonstrationError(`${where}: the last message must be the assistant's`);

  const ids: number[] = [];
  const mask: number[] = [];
  const turns: number[] = [];
  const callTurns: boolean[] = [];
  const push = (tokens: readonly number[], generated: boolean) => {
    for (const id of tokens) {
      ids.push(id);
      mask.push(generated ? 1 : 0);
      turns.push(generated ? callTurns.length : 0);
    }
  };
  push(template.promptTokens(messages.slice(0, firstAssistant), render).ids, false);

  let k = firstAssistant;
  while (k < messages.length) {
    if (messages[k].role !== 'assistant')
      throw new DemonstrationError(
        `${where}: messages.${k}: expected an assistant message after the tool results, got "${messages[k].role}"`,
      );
    // The assistant turn: what the template puts after the generation prompt when this message is the last.
    const header = template.render(messages.slice(0, k), { ...render, addGenerationPrompt: true });
    const withTurn = template.render(messages.slice(0, k + 1), { ...render, addGenerationPrompt: false });
    const end = withTurn.indexOf(template.endOfTurnToken, header.length);
    if (!withTurn.startsWith(header) || end < 0) {
      throw new DemonstrationError(
        `${where}: messages.${k}: the template does not render this assistant turn right after its generation prompt, so it has no token-exact layout`,
      );
    }
    const turn = messages[k];
    callTurns.push(turn.role === 'assistant' && (turn.tool_calls?.length ?? 0) > 0);
    push([...template.tokenizer.encode(withTurn.slice(header.length, end)), template.endOfTurnId], true);

    let next = k + 1;
    while (next < messages.length && messages[next].role !== 'assistant') next++;
    if (next === messages.length) break;
    const appended = template.appendTokens({ messages: messages.slice(0, k + 1), ids }, messages.slice(k + 1, next), {
      ...render,
      onHistoryRewrite: 'keep-tokens',
    });
    push(appended.ids, false);
    k = next;
  }
  if (options.images?.list.length) {
    // Image placeholders sit in prompt and tool messages only (mask 0): expand each to its image's tokens.
    const { list, imageTokenId } = options.images;
    const expanded = expandImageTokens(ids, list, imageTokenId, where);
    const expandedMask: number[] = [];
    const expandedTurns: number[] = [];
    let k2 = 0;
    ids.forEach((id, t) => {
      if (id !== imageTokenId) {
        expandedMask.push(mask[t]);
        expandedTurns.push(turns[t]);
      } else
        for (let i = 0, n = list[k2++].tokens; i < n; i++) {
          expandedMask.push(0);
          expandedTurns.push(0);
        }
    });
    return {
      ids: expanded,
      mask: Uint8Array.from(expandedMask),
      turns: Uint16Array.from(expandedTurns),
      callTurns,
    };
  }
  return { ids, mask: Uint8Array.from(mask), turns: Uint16Array.from(turns), callTurns };
}
