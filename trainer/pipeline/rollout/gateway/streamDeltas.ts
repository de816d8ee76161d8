import type { ToolCallDelta } from '../../../contract/protocol/openaiChat';
import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import type { AssistantAnswer } from './assistantAnswer';

/**
 * The deltas of one streamed answer (`stream: true`), as its tokens are sampled: thinking as
 * `reasoning_content`, then the content, each sent as soon as it is certain. Text is held back
 * while it could still turn out to be something else — an unfinished UTF-8 character, the start
 * of `<tool_call>` or `</think>`, the start of a request's stop string — and nothing after the
 * first call's opening marker is sent as content. When the turn ends, the rest of the content and
 * each tool call (its id, name and whole arguments in one delta, which the SDKs accumulate as
 * they do OpenAI's fragments) follow.
 */

export interface Delta {
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCallDelta[];
}

const OPEN_CALL = '<tool_call>';
const CLOSE_THINK = '</think>';

/** `text` without its longest suffix that is a proper prefix of one of `markers` (it may still become one). */
function held(text: string, markers: readonly string[]): string {
  let cut = 0;
  for (const m of markers)
    for (let n = Math.min(m.length - 1, text.length); n > cut; n--) if (text.endsWith(m.slice(0, n))) cut = n;
  return text.slice(0, text.length - cut);
}

/** What of a part is certain to be in the trimmed answer: no leading whitespace, none at the end yet. */
function settled(text: string): string {
  return text.trim();
}

export class StreamDeltas {
  private readonly tokens: number[] = [];
  private sentReasoning = '';
  private sentContent = '';
  private done = false;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly endIds: ReadonlySet<number>,
    private readonly stop: readonly string[],
  ) {}

  /** The delta this token makes certain, if any. */
  push(token: number): Delta | undefined {
    if (this.done || this.endIds.has(token)) return undefined;
    this.tokens.push(token);
    let text = this.tokenizer.decode(this.tokens);
    if (text.endsWith('\uFFFD')) return undefined;
    const stopAt = this.stopIndex(text);
    if (stopAt >= 0) {
      text = text.slice(0, stopAt);
      this.done = true;
    }
    return this.deltaOf(text, this.done ? [] : [OPEN_CALL, CLOSE_THINK, ...this.stop]);
  }

  private stopIndex(text: string): number {
    let at = -1;
    for (const s of this.stop) {
      const i = text.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) at = i;
    }
    return at;
  }

  private deltaOf(text: string, markers: readonly string[]): Delta | undefined {
    const delta: Delta = {};
    const thinkOpen = /^\s*<think>/.exec(text);
    let contentFrom = 0;
    if (thinkOpen) {
      const close = text.indexOf(CLOSE_THINK, thinkOpen[0].length);
      const reasoning =
        close >= 0 ? text.slice(thinkOpen[0].length, close) : held(text.slice(thinkOpen[0].length), markers);
      const sure = settled(reasoning);
      if (sure.length > this.sentReasoning.length && sure.startsWith(this.sentReasoning)) {
        delta.reasoning_content = sure.slice(this.sentReasoning.length);
        this.sentReasoning = sure;
      }
      if (close < 0) return delta.reasoning_content ? delta : undefined;
      contentFrom = close + CLOSE_THINK.length;
    }
    let content = text.slice(contentFrom);
    const call = content.indexOf(OPEN_CALL);
    content = settled(call >= 0 ? content.slice(0, call) : held(content, markers));
    if (content.length > this.sentContent.length && content.startsWith(this.sentContent)) {
      delta.content = content.slice(this.sentContent.length);
      this.sentContent = content;
    }
    return delta.content !== undefined || delta.reasoning_content !== undefined ? delta : undefined;
  }

  /** What is left once the answer is complete: the rest of its content, then its tool calls. */
  finish(answer: AssistantAnswer): Delta | undefined {
    const delta: Delta = {};
    const content = answer.message.content ?? '';
    if (content.length > this.sentContent.length && content.startsWith(this.sentContent))
      delta.content = content.slice(this.sentContent.length);
    if (answer.message.tool_calls?.length)
      delta.tool_calls = answer.message.tool_calls.map((c, index) => ({
        index,
        id: c.id,
        type: 'function',
        function: { name: c.function.name, arguments: c.function.arguments },
      }));
    this.done = true;
    return delta.content !== undefined || delta.tool_calls ? delta : undefined;
  }
}
