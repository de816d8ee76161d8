import type {
  ChatContent,
  ChatContentPart,
  ChatMessage,
  ToolCallMessagePart,
  ToolSpec,
} from '../../../contract/protocol/chatMessages';
import { describeIssues } from '../../../contract/protocol/parse';
import {
  ChatCompletionRequest,
  type OpenAIMessage,
  type OpenAITool,
  type OpenAIToolChoice,
} from '../../../contract/protocol/openaiChat';
import { definedFields } from '../../../contract/definedFields';

/**
 * A Chat Completions request read into what the policy works with: our chat messages (as the
 * model's chat template reads them), tool specs, and the turn's settings. Everything a client can
 * send is either honoured or refused with a 400 that names the field: a request is never answered
 * as if it had asked for something else.
 */

export type ToolChoice =
  { kind: 'auto' } | { kind: 'none' } | { kind: 'required' } | { kind: 'function'; name: string };
export type ResponseFormat = { kind: 'text' } | { kind: 'json'; schema: Record<string, unknown> };

export interface ChatTurnRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  toolChoice: ToolChoice;
  /** Several calls in one answer (OpenAI's default); false: at most one. */
  parallelToolCalls: boolean;
  responseFormat: ResponseFormat;
  temperature: number | undefined;
  topP: number | undefined;
  /** `max_completion_tokens`, or the older `max_tokens`. */
  maxTokens: number | undefined;
  /** Strings that end the answer; OpenAI leaves them out of the text. */
  stop: string[];
  seed: number | undefined;
  n: number;
  stream: boolean;
  includeUsage: boolean;
  logprobs: boolean;
  /** vLLM's `chat_template_kwargs` (e.g. `{ enable_thinking: false }`). */
  templateKwargs: Record<string, unknown> | undefined;
}

/** A request we refuse: the HTTP status and OpenAI's error fields. */
export class ChatRequestError extends Error {
  constructor(
    message: string,
    readonly status: number = 400,
    readonly param: string | null = null,
    readonly code: string | null = null,
    readonly type: string = 'invalid_request_error',
  ) {
    super(message);
    this.name = 'ChatRequestError';
  }
}

function textOf(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  let text = '';
  (content as { type: string; text?: string; refusal?: string }[]).forEach((part, i) => {
    if (part.type === 'text') text += part.text ?? '';
    else if (part.type === 'refusal') text += part.refusal ?? '';
    else throw unsupportedPart(part.type, i, where);
  });
  return text;
}

function unsupportedPart(type: string, i: number, where: string): ChatRequestError {
  return new ChatRequestError(
    `${where}.content[${i}]: content parts of type "${type}" are not supported here; send text (images go in user messages as image_url parts)`,
    400,
    `${where}.content`,
    'unsupported_content',
  );
}

/**
 * A user message's content: text, or text and images in order. An image comes as a `data:` URL
 * (what the SDKs make of a local file); a web address is refused, because fetching what a request
 * names from the machine that serves the model would let any client make it reach other hosts.
 */
function userContent(content: unknown, where: string): ChatContent {
  if (typeof content === 'string' || !Array.isArray(content)) return textOf(content, where);
  const parts = content as { type: string; text?: string; image_url?: { url: string } }[];
  if (!parts.some((part) => part.type === 'image_url')) return textOf(content, where);
  return parts.map((part, i): ChatContentPart => {
    if (part.type === 'text') return { type: 'text', text: part.text ?? '' };
    if (part.type !== 'image_url') throw unsupportedPart(part.type, i, where);
    const url = part.image_url!.url;
    if (!/^data:image\/[a-z0-9.+-]+;base64,/i.test(url))
      throw new ChatRequestError(
        `${where}.content[${i}].image_url.url: only data: URLs are read (data:image/png;base64,…); ${/^https?:/i.test(url) ? 'this server does not fetch web addresses: download the image and send its bytes' : 'send the image as a base64 data: URL'}`,
        400,
        `${where}.content[${i}].image_url.url`,
        'invalid_image_url',
      );
    return { type: 'image', base64: url };
  });
}

/** A tool call's arguments as the template renders them: the object, or the string when it is not a JSON object. */
export function parseArguments(text: string): Record<string, unknown> | string {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Kept as written: the template shows the string, the match compares it as text.
  }
  return text;
}

function toChatMessages(messages: readonly OpenAIMessage[]): ChatMessage[] {
  const callNames = new Map<string, string>();
  return messages.map((m, i): ChatMessage => {
    const where = `messages[${i}]`;
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textOf(m.content, where) };
      case 'user':
        return { role: 'user', content: userContent(m.content, where) };
      case 'assistant': {
        const calls: ToolCallMessagePart[] = (m.tool_calls ?? []).map((c) => {
          callNames.set(c.id, c.function.name);
          return {
            id: c.id,
            type: 'function',
            function: { name: c.function.name, arguments: parseArguments(c.function.arguments) },
          };
        });
        const content = textOf(m.content, where);
        return calls.length ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content };
      }
      case 'tool': {
        const name = callNames.get(m.tool_call_id);
        return {
          role: 'tool',
          content: textOf(m.content, where),
          tool_call_id: m.tool_call_id,
          ...definedFields({ name }),
        };
      }
      case 'function':
        throw new ChatRequestError(
          `${where}: the "function" role is deprecated; send tool results as role "tool" with a tool_call_id`,
          400,
          `${where}.role`,
        );
    }
  });
}

function toToolSpecs(tools: readonly OpenAITool[]): ToolSpec[] {
  const names = new Set<string>();
  return tools.map((t, i) => {
    if (names.has(t.function.name))
      throw new ChatRequestError(
        `tools[${i}]: two tools are named "${t.function.name}"`,
        400,
        `tools[${i}].function.name`,
      );
    names.add(t.function.name);
    return {
      type: 'function',
      function: {
        name: t.function.name,
        ...definedFields({ description: t.function.description }),
        parameters: t.function.parameters ?? { type: 'object', properties: {} },
      },
    };
  });
}

function toolChoiceOf(choice: OpenAIToolChoice | undefined, tools: readonly ToolSpec[]): ToolChoice {
  if (choice === undefined) return { kind: tools.length ? 'auto' : 'none' };
  if (typeof choice === 'string') {
    if (choice !== 'none' && tools.length === 0)
      throw new ChatRequestError(`tool_choice "${choice}" needs tools; the request has none`, 400, 'tool_choice');
    return { kind: choice };
  }
  const name = choice.function.name;
  if (!tools.some((t) => t.function.name === name))
    throw new ChatRequestError(
      `tool_choice names the function "${name}", which is not one of the request's tools (${tools.map((t) => t.function.name).join(', ') || 'none'})`,
      400,
      'tool_choice',
    );
  return { kind: 'function', name };
}

/** Fields we read but cannot honour unless they keep their default: refused by name, never ignored. */
function refuseUnsupported(r: ChatCompletionRequest): void {
  const refuse = (param: string, why: string) => {
    throw new ChatRequestError(`${param}: ${why}`, 400, param, 'unsupported_parameter');
  };
  if (r.presence_penalty) refuse('presence_penalty', 'penalties are not supported; leave it 0');
  if (r.frequency_penalty) refuse('frequency_penalty', 'penalties are not supported; leave it 0');
  if (r.logit_bias && Object.keys(r.logit_bias).length) refuse('logit_bias', 'logit_bias is not supported');
  if (r.top_logprobs) refuse('top_logprobs', "only the sampled tokens' logprobs are returned; leave top_logprobs 0");
  if (r.top_logprobs === 0 && !r.logprobs) refuse('top_logprobs', 'top_logprobs needs logprobs: true');
}

/** Reads and checks a request body (already JSON); errors are ChatRequestErrors naming the field. */
export function readChatRequest(body: unknown): ChatTurnRequest {
  const parsed = ChatCompletionRequest.safeParse(body);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new ChatRequestError(describeIssues(parsed.error.issues), 400, first?.path.join('.') || null);
  }
  const r = parsed.data;
  refuseUnsupported(r);
  const tools = toToolSpecs(r.tools ?? []);
  const stop = r.stop === null || r.stop === undefined ? [] : typeof r.stop === 'string' ? [r.stop] : r.stop;
  if (stop.some((s) => s === '')) throw new ChatRequestError('stop: a stop string may not be empty', 400, 'stop');
  const format = r.response_format;
  const responseFormat: ResponseFormat =
    format?.type === 'json_object'
      ? { kind: 'json', schema: { type: 'object' } }
      : format?.type === 'json_schema'
        ? { kind: 'json', schema: format.json_schema.schema ?? {} }
        : { kind: 'text' };
  const kwargs = (r as { chat_template_kwargs?: unknown }).chat_template_kwargs;
  if (kwargs !== undefined && (typeof kwargs !== 'object' || kwargs === null || Array.isArray(kwargs)))
    throw new ChatRequestError('chat_template_kwargs: expected an object', 400, 'chat_template_kwargs');
  return {
    model: r.model,
    messages: toChatMessages(r.messages),
    tools,
    toolChoice: toolChoiceOf(r.tool_choice, tools),
    parallelToolCalls: r.parallel_tool_calls ?? true,
    responseFormat,
    temperature: r.temperature ?? undefined,
    topP: r.top_p ?? undefined,
    maxTokens: r.max_completion_tokens ?? r.max_tokens ?? undefined,
    stop,
    seed: r.seed ?? undefined,
    n: r.n ?? 1,
    stream: r.stream ?? false,
    includeUsage: r.stream_options?.include_usage ?? false,
    logprobs: r.logprobs ?? false,
    templateKwargs: kwargs as Record<string, unknown> | undefined,
  };
}
