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

export const ChatMessage = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: z.string() }),
  z.looseObject({ role: z.literal('user'), content: z.string() }),
  z.looseObject({
    role: z.literal('assistant'),
    content: z.string(),
    /** The thinking part, when kept apart from `content` (Qwen3 templates read it). */
    reasoning_content: z.string().optional(),
    tool_calls: z.array(ToolCallMessagePart).optional(),
  }),
  z.looseObject({ role: z.literal('tool'), content: z.string(), name: z.string().optional(), tool_call_id: z.string().optional() }),
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
