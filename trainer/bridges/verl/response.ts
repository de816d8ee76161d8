import type { ChatMessage } from '../../contract/protocol/chatMessages';
import type { ParsedToolCall, ToolCallFormat } from '../../pipeline/rollout/formats/toolCallFormat';

/**
 * verl hands a reward function, and dumps per step, the response as text: the token ids after
 * the prompt decoded with `skip_special_tokens=True` (verl/workers/reward_manager/naive.py,
 * ray_trainer.py `_log_rollout_data`). With its tool agent loop that text holds every turn: the
 * policy's turns and, between them, the tool results the chat template appended — for the Qwen
 * family (Hermes calls) `<|im_start|>user\n<tool_response>\n…\n</tool_response><|im_end|>\n<|im_start|>assistant\n`,
 * which loses its special tokens and reads `user\n<tool_response>\n…\n</tool_response>\nassistant\n`
 * (verl/experimental/agent_loop/tool_agent_loop.py, `_handle_processing_tools_state`).
 *
 * `splitVerlResponse` turns it back into chat messages: assistant turns (their text as the policy
 * wrote it, calls included, for the tool-call format to read) and one tool message per
 * `<tool_response>`. A tool result that itself contains `</tool_response>` would be cut there;
 * the text gives no way to tell.
 */

const TOOL_BLOCK = /\n?user\n((?:<tool_response>\n[\s\S]*?\n<\/tool_response>\n?)+)assistant\n/g;
const EMPTY_TURN = /^(?:<think>\s*<\/think>)?\s*$/;
const TOOL_RESPONSE = /<tool_response>\n([\s\S]*?)\n<\/tool_response>/g;

export function splitVerlResponse(text: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let at = 0;
  for (const block of text.matchAll(TOOL_BLOCK)) {
    messages.push({ role: 'assistant', content: text.slice(at, block.index) });
    for (const response of block[1].matchAll(TOOL_RESPONSE)) messages.push({ role: 'tool', content: response[1] });
    at = block.index + block[0].length;
  }
  // The last turn: what the policy wrote after the last results. Nothing, or only the empty
  // thinking block Qwen3's generation prompt adds (template text), means it wrote nothing there.
  const tail = text.slice(at);
  if (!EMPTY_TURN.test(tail) || messages.length === 0) messages.push({ role: 'assistant', content: tail });
  return messages;
}

/**
 * The calls of a generated turn, read by the tool-call format. The last turn, when no tool result
 * follows it, was cut by the budget or ended the episode: if it holds a call that cannot be read
 * it was cut mid-call, and a cut turn has no calls — in our loop (a turn ended by length is not
 * parsed) and in verl's (the response budget is checked before calls are extracted).
 */
export function turnCalls(format: ToolCallFormat, text: string, unansweredLast: boolean): ParsedToolCall[] {
  const calls = format.parse(text);
  return unansweredLast && calls.some((c) => c.parseError !== undefined) ? [] : calls;
}
