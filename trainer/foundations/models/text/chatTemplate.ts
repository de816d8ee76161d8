import { Template } from '@huggingface/jinja';
import { z } from 'zod';
import { ChatMessage, ToolSpec } from '../../../contract/protocol/chatMessages';
import { describeIssues } from '../../../contract/protocol/parse';
import { ChatTemplateError } from '../modelErrors';
import type { Tokenizer } from './tokenizer';

/**
 * The model's own chat template, rendered with `@huggingface/jinja` as `transformers`'
 * `apply_chat_template` renders it, plus the token-in/token-out step of a multi-turn rollout:
 * appending tool results (and the next generation prompt) to the exact tokens the policy saw
 * and produced, without re-tokenising any of them.
 *
 * The assistant message in the history is only the template's view of that turn: it may be
 * rendered differently from the tokens the policy generated (JSON spacing, say) without harm,
 * because those tokens are kept as they are and only the text after the turn's end-of-turn
 * token is tokenised. What must not change is the rendering of everything up to that token
 * once more messages follow; that is what the prefix check asserts.
 *
 * Why append instead of re-rendering: re-tokenising a whole conversation can give different
 * ids for text the policy produced (a generated `" hel" "lo"` re-encodes as `" hello"`), and
 * some templates rewrite earlier turns. Either way the trained sequence would no longer be the
 * one that was sampled, which is how RL training drifts into NaN.
 */

export interface RenderOptions {
  /** Function tools, as JSON Schemas in `{type: 'function', function: {name, description, parameters}}`. */
  tools?: readonly ToolSpec[] | undefined;
  /** End with the header of a new assistant turn (`<|im_start|>assistant\n`). */
  addGenerationPrompt?: boolean | undefined;
  /** Other template variables, e.g. `{ enable_thinking: false }`. */
  kwargs?: Record<string, unknown> | undefined;
  /** Which named template to use when the tokenizer has several (default: `tool_use` with tools, else `default`). */
  templateName?: string | undefined;
}

export interface AppendOptions extends RenderOptions {
  /**
   * What to do when the template renders the earlier conversation differently once more
   * messages follow (Qwen3 drops earlier turns' empty thinking blocks, for example): `error`
   * (default) fails; `keep-tokens` keeps the tokens the policy saw, appends what the template
   * puts after that turn's end-of-turn token, and reports the rewrite.
   */
  onHistoryRewrite?: 'error' | 'keep-tokens' | undefined;
}

/** A conversation so far and the exact token ids the policy saw and produced for it. */
export interface TokenizedHistory {
  /** Every message so far, the last being the assistant turn that was just generated. */
  messages: readonly ChatMessage[];
  /** Prompt and generated ids; the last is the end-of-turn token that stopped generation. */
  ids: readonly number[];
}

export interface HistoryRewrite {
  /** First character where the renderings before and after differ. */
  index: number;
  before: string;
  after: string;
}

export interface TokenizedText {
  text: string;
  ids: number[];
}

export interface AppendResult extends TokenizedText {
  /** Set when the template rewrote the earlier conversation and `onHistoryRewrite` was `keep-tokens`. */
  historyRewrite?: HistoryRewrite;
}

const EXCERPT_CHARS = 40;

function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

function lineAndColumn(text: string, index: number): string {
  const before = text.slice(0, index);
  const line = before.split('\n').length;
  return `line ${line}, column ${index - before.lastIndexOf('\n')}`;
}

function excerpt(text: string, index: number): string {
  return text.slice(Math.max(0, index - EXCERPT_CHARS), index + EXCERPT_CHARS);
}

export class ChatTemplate {
  private readonly parsed = new Map<string, Template>();
  /** The token that ends a turn (Qwen `<|im_end|>`, Llama 3 `<|eot_id|>`). */
  readonly endOfTurnToken: string;
  readonly endOfTurnId: number;

  /**
   * @param templates template source by name (`default`, `tool_use`, …)
   * @param origin where the templates came from (a file), for error messages
   * @param endOfTurnToken default: the tokenizer's `eos_token`
   */
  constructor(
    readonly tokenizer: Tokenizer,
    private readonly templates: Record<string, string>,
    readonly origin: string,
    endOfTurnToken?: string,
  ) {
    const token = endOfTurnToken ?? tokenizer.specialTokenStrings.eos_token;
    if (token === undefined) {
      throw new ChatTemplateError(
        `${origin}: the tokenizer has no eos_token; name the end-of-turn token (e.g. "<|im_end|>") explicitly`,
      );
    }
    // Cutting the token sequence right after this token is only safe if the tokenizer never
    // merges text across it, which holds for added tokens.
    if (!tokenizer.isAddedToken(token)) {
      throw new ChatTemplateError(
        `${origin}: end-of-turn token ${JSON.stringify(token)} is not an added token of the tokenizer, so text after it could tokenise differently on its own`,
      );
    }
    this.endOfTurnToken = token;
    this.endOfTurnId = tokenizer.tokenId(token);
  }

  /** The chat template(s) that came with the tokenizer. */
  static fromTokenizer(tokenizer: Tokenizer, endOfTurnToken?: string): ChatTemplate {
    const sources = tokenizer.chatTemplates;
    if (!sources) {
      throw new ChatTemplateError(
        `${tokenizer.dir}: no chat template (neither chat_template.jinja nor chat_template in tokenizer_config.json)`,
      );
    }
    return new ChatTemplate(tokenizer, sources.templates, sources.file, endOfTurnToken);
  }

  /** The conversation as the template renders it. */
  render(messages: readonly ChatMessage[], options: RenderOptions = {}): string {
    this.check(messages, options.tools);
    return this.renderUnchecked(messages, options);
  }

  /** The first prompt: the rendered conversation (with the generation prompt, by default) and its ids. */
  promptTokens(messages: readonly ChatMessage[], options: RenderOptions = {}): TokenizedText {
    const text = this.render(messages, { ...options, addGenerationPrompt: options.addGenerationPrompt ?? true });
    return { text, ids: this.tokenizer.encode(text) };
  }

  /**
   * The text and ids to append to `history.ids` for `newMessages` (tool results, a user turn)
   * and, by default, the next generation prompt. Renders the conversation without and with the
   * new messages, checks that the first rendering is an unchanged prefix of the second, and
   * tokenises only what follows the history's final end-of-turn token.
   */
  appendTokens(
    history: TokenizedHistory,
    newMessages: readonly ChatMessage[],
    options: AppendOptions = {},
  ): AppendResult {
    const all = [...history.messages, ...newMessages];
    this.check(all, options.tools);
    const last = history.ids[history.ids.length - 1];
    if (last !== this.endOfTurnId) {
      const shown =
        last === undefined
          ? 'the history is empty'
          : `its last token is ${last} (${JSON.stringify(this.tokenizer.pieces([last])[0])})`;
      throw new ChatTemplateError(
        `appendTokens: the history must end with the end-of-turn token ${this.endOfTurnToken} (id ${this.endOfTurnId}), but ${shown}; append only after a completed turn`,
      );
    }
    const before = this.renderUnchecked(history.messages, { ...options, addGenerationPrompt: false });
    const after = this.renderUnchecked(all, { ...options, addGenerationPrompt: options.addGenerationPrompt ?? true });
    const eot = this.endOfTurnToken;
    const eotAt = before.lastIndexOf(eot);
    if (eotAt < 0)
      throw new ChatTemplateError(
        `${this.origin}: the rendered history contains no end-of-turn token ${eot}, so there is no point to append after`,
      );
    const cut = eotAt + eot.length;
    if (after.startsWith(before)) return this.tokenized(after.slice(cut));

    const index = firstDifference(before, after);
    const historyRewrite = { index, before: excerpt(before, index), after: excerpt(after, index) };
    if ((options.onHistoryRewrite ?? 'error') === 'error') {
      throw new ChatTemplateError(
        `${this.origin}: the chat template rewrites the earlier conversation when ${newMessages.length} message(s) follow, ` +
          `so the tokens already generated are no longer a prefix of its rendering. First difference at character ${index} ` +
          `(${lineAndColumn(before, index)}): before ${JSON.stringify(historyRewrite.before)}, after ${JSON.stringify(historyRewrite.after)}. ` +
          `To keep the tokens the policy saw and append after them anyway, pass onHistoryRewrite: 'keep-tokens'.`,
      );
    }
    // The same end-of-turn token in the new rendering: the one with as many before it.
    const count = before.split(eot).length - 1;
    let at = -1;
    for (let k = 0; k < count; k++) {
      at = after.indexOf(eot, at + 1);
      if (at < 0) break;
    }
    const suffix = at < 0 ? undefined : after.slice(at + eot.length);
    if (suffix === undefined || !suffix.startsWith(before.slice(cut))) {
      throw new ChatTemplateError(
        `${this.origin}: the chat template changes the number or the ends of the earlier turns when ${newMessages.length} message(s) follow; ` +
          `there is no safe point to append after (first difference at character ${index}: before ${JSON.stringify(historyRewrite.before)}, after ${JSON.stringify(historyRewrite.after)})`,
      );
    }
    return { ...this.tokenized(suffix), historyRewrite };
  }

  private tokenized(text: string): TokenizedText {
    return { text, ids: this.tokenizer.encode(text) };
  }

  private check(messages: readonly ChatMessage[], tools: readonly ToolSpec[] | undefined): void {
    const parsed = z.array(ChatMessage).safeParse(messages);
    if (!parsed.success) throw new ChatTemplateError(`chat messages: ${describeIssues(parsed.error.issues)}`);
    if (tools) {
      const parsedTools = z.array(ToolSpec).safeParse(tools);
      if (!parsedTools.success) throw new ChatTemplateError(`tools: ${describeIssues(parsedTools.error.issues)}`);
    }
  }

  private renderUnchecked(messages: readonly ChatMessage[], options: RenderOptions): string {
    const name =
      options.templateName ?? (options.tools?.length && 'tool_use' in this.templates ? 'tool_use' : 'default');
    const source = this.templates[name];
    if (source === undefined) {
      throw new ChatTemplateError(
        `${this.origin}: no chat template named "${name}" (templates: ${Object.keys(this.templates).join(', ')})`,
      );
    }
    let template = this.parsed.get(name);
    if (!template) {
      try {
        template = new Template(source);
      } catch (error) {
        throw new ChatTemplateError(
          `${this.origin}: chat template "${name}" does not parse: ${(error as Error).message}`,
        );
      }
      this.parsed.set(name, template);
    }
    // The variables transformers' apply_chat_template provides: the special-token strings,
    // `messages`, `tools`, `add_generation_prompt`, then the caller's kwargs.
    const variables: Record<string, unknown> = { ...this.tokenizer.specialTokenStrings };
    variables['messages'] = messages;
    if (options.tools && options.tools.length > 0) variables['tools'] = options.tools;
    variables['add_generation_prompt'] = options.addGenerationPrompt ?? false;
    for (const [key, value] of Object.entries(options.kwargs ?? {})) {
      if (key === 'messages' || key === 'tools' || key === 'add_generation_prompt') {
        throw new ChatTemplateError(
          `chat template kwargs: "${key}" is set by the renderer itself; pass it as its own option`,
        );
      }
      variables[key] = value;
    }
    try {
      return template.render(variables);
    } catch (error) {
      throw new ChatTemplateError(
        `${this.origin}: chat template "${name}" failed to render: ${(error as Error).message}`,
      );
    }
  }
}
