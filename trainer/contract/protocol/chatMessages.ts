import { z } from 'zod';

/**
 * Chat messages and tool specifications in the shape Hugging Face chat templates read them
 * (the OpenAI-style fields `transformers`' `apply_chat_template` passes through): snake_case,
 * tool calls under `tool_calls[].function`, tools as `{type: 'function', function: {…}}`.
 * Extra fields pass through untouched, because a template may read them.
 */

export const ToolCallMessagePart = z.looseObject({
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.looseObject({
    name: z.string().min(1),
    /** An object (rendered with the template's `tojson`) or a JSON string as the model wrote it. */
    arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
  }),
});
export type ToolCallMessagePart = z.infer<typeof ToolCallMessagePart>;

/**
 * A part of a message's content, as multimodal chat templates read them: text, or an image
 * (rendered by a vision-language template as its image placeholder). An image names where its
 * bytes are — `path` (relative to the dataset file), `base64`, or, once loaded, its `sha256`.
 */
export const ChatTextPart = z.looseObject({ type: z.literal('text'), text: z.string() });
export const ChatImagePart = z.looseObject({
  type: z.literal('image'),
  path: z.string().min(1).optional(),
  base64: z.string().min(1).optional(),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});
export const ChatContentPart = z.discriminatedUnion('type', [ChatTextPart, ChatImagePart]);
export type ChatContentPart = z.infer<typeof ChatContentPart>;
export type ChatImagePart = z.infer<typeof ChatImagePart>;
/** A message's content: a string, or parts (text and images) in order. */
export const ChatContent = z.union([z.string(), z.array(ChatContentPart)]);
export type ChatContent = z.infer<typeof ChatContent>;

/** The text of a message's content (its text parts, in order; images left out). */
export function contentText(content: ChatContent): string {
  return typeof content === 'string'
    ? content
    : content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}

/** The image parts of a message's content, in order. */
export function contentImages(content: ChatContent): ChatImagePart[] {
  return typeof content === 'string' ? [] : content.filter((part): part is ChatImagePart => part.type === 'image');
}

export const ChatMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: ChatContent }),
  z.looseObject({ role: z.literal('user'), content: ChatContent }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.string(),
    /** The thinking part, when kept apart from `content` (Qwen3 templates read it). */
    reasoning_content: z.string().optional(),
    tool_calls: z.array(ToolCallMessagePart).optional(),
  }),
  z.looseObject({
    role: z.literal('tool'),
    content: ChatContent,
    name: z.string().optional(),
    tool_call_id: z.string().optional(),
  }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** A function tool as templates expect it; `parameters` is a JSON Schema object. */
export const ToolSpec = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});
export type ToolSpec = z.infer<typeof ToolSpec>;
