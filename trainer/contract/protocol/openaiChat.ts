import { z } from 'zod';

/**
 * OpenAI's Chat Completions API as `rollout-studio serve` and a training run's agent endpoint
 * speak it (https://platform.openai.com/docs/api-reference/chat): the request as clients send it,
 * and the answers, chunks and errors as the official SDKs read them. Field names and shapes are
 * OpenAI's exactly; the official clients (`openai` for TypeScript and Python, the Vercel AI SDK,
 * LangChain.js) are the test.
 *
 * Requests are loose objects: a field a newer SDK adds passes through unread, as OpenAI's own
 * server lets it. A field we read but cannot honour with a non-default value (`logit_bias`,
 * `presence_penalty`, …) is refused with a 400 naming it (gateway/chatRequest.ts), never ignored.
 */

const TextPart = z.looseObject({ type: z.literal('text'), text: z.string() });
const ImageUrlPart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
});
const RefusalPart = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });
/** Parts a client may send that we read only to refuse by name (audio, files). */
const OtherPart = z.looseObject({ type: z.string() });

const TextContent = z.union([z.string(), z.array(z.union([TextPart, OtherPart]))]);
const UserContent = z.union([z.string(), z.array(z.union([TextPart, ImageUrlPart, OtherPart]))]);

export const OpenAIToolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});
export type OpenAIToolCall = z.infer<typeof OpenAIToolCall>;

export const OpenAIMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: TextContent, name: z.string().optional() }),
  z.looseObject({ role: z.literal('developer'), content: TextContent, name: z.string().optional() }),
  z.looseObject({ role: z.literal('user'), content: UserContent, name: z.string().optional() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.union([TextPart, RefusalPart, OtherPart])), z.null()]).optional(),
    tool_calls: z.array(OpenAIToolCall).optional(),
    refusal: z.string().nullable().optional(),
    name: z.string().optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content: TextContent, tool_call_id: z.string() }),
  // The deprecated `function` role: read so that its refusal can name it.
  z.looseObject({ role: z.literal('function'), content: z.string().nullable(), name: z.string() }),
]);
export type OpenAIMessage = z.infer<typeof OpenAIMessage>;

export const OpenAITool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'a function name is 1 to 64 letters, digits, _ or -'),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});
export type OpenAITool = z.infer<typeof OpenAITool>;

export const OpenAIToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1) }) }),
]);
export type OpenAIToolChoice = z.infer<typeof OpenAIToolChoice>;

export const OpenAIResponseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string().min(1),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);
export type OpenAIResponseFormat = z.infer<typeof OpenAIResponseFormat>;

export const ChatCompletionRequest = z.looseObject({
  model: z.string().min(1),
  messages: z.array(OpenAIMessage).min(1),
  tools: z.array(OpenAITool).optional(),
  tool_choice: OpenAIToolChoice.optional(),
  parallel_tool_calls: z.boolean().optional(),
  response_format: OpenAIResponseFormat.optional(),
  temperature: z.number().min(0).max(2).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: z.number().int().positive().nullable().optional(),
  max_completion_tokens: z.number().int().positive().nullable().optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4)])
    .nullable()
    .optional(),
  seed: z.number().int().nullable().optional(),
  n: z.number().int().min(1).max(128).nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  presence_penalty: z.number().nullable().optional(),
  frequency_penalty: z.number().nullable().optional(),
  logit_bias: z.record(z.string(), z.number()).nullable().optional(),
  user: z.string().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

export type ChatFinishReason = 'stop' | 'length' | 'tool_calls';

export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[];
  top_logprobs: [];
}

export interface ChatCompletionMessage {
  role: 'assistant';
  content: string | null;
  refusal: null;
  tool_calls?: OpenAIToolCall[];
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: {
    index: number;
    message: ChatCompletionMessage;
    logprobs: { content: TokenLogprob[]; refusal: null } | null;
    finish_reason: ChatFinishReason;
  }[];
  usage: Usage;
}

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  system_fingerprint: string;
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string; refusal?: null; tool_calls?: ToolCallDelta[] };
    logprobs: { content: TokenLogprob[]; refusal: null } | null;
    finish_reason: ChatFinishReason | null;
  }[];
  usage?: Usage | null;
}

export interface ModelList {
  object: 'list';
  data: { id: string; object: 'model'; created: number; owned_by: string }[];
}

/** OpenAI's error body: `type` is the class (`invalid_request_error`, …), `param` the field, `code` a short name. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
