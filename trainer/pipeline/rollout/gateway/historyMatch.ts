import { contentImages, contentText, type ChatMessage, type ToolSpec } from '../../../contract/protocol/chatMessages';
import { contentStart } from '../formats/toolCallFormat';
import { parseArguments } from './chatRequest';

/**
 * Does an agent's next request continue the conversation the policy has seen so far? Agents
 * re-send their whole history with every request; the trainer must put exactly the tokens the
 * policy sampled in the training sequence, never a re-tokenisation of the text the agent sent
 * back (Agent-R1 #30, rllm #352, trl #5144). So the request is compared with what the sequence
 * holds, message by message:
 *
 *   extend  every message the sequence holds comes back unchanged, followed by new ones (tool
 *           results, a user turn): only the new ones are rendered and appended to the tokens;
 *   split   the agent changed its history — dropped, edited or summarised turns, changed its
 *           tools — so the request is no continuation: the session goes on in a new sequence
 *           from this request, and `reason` says where and why.
 *
 * "Unchanged" is read the way agents and SDKs re-send messages: an assistant message we answered
 * matches when its text is ours (whitespace at the ends aside, its thinking kept or dropped) and
 * its tool calls are ours by name and arguments as JSON values (SDKs re-serialise the argument
 * strings); other messages match by role, text, images (by content hash) and tool_call_id. Ids of our calls are not
 * compared: some frameworks make their own.
 */

export type HistoryMatch = { kind: 'extend'; newMessages: ChatMessage[] } | { kind: 'split'; reason: string };

function answerText(text: string): string {
  return text.slice(contentStart(text)).trim();
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function argumentsValue(args: unknown): unknown {
  return typeof args === 'string' ? parseArguments(args) : args;
}

/** Why `sent` is not the message `held`, or undefined when it is. */
export function messageDifference(held: ChatMessage, sent: ChatMessage): string | undefined {
  if (held.role !== sent.role) return `its role is ${sent.role} where the conversation had ${held.role}`;
  if (held.role === 'assistant' && sent.role === 'assistant') {
    if (answerText(held.content) !== answerText(sent.content)) return 'the assistant text was edited';
    const a = held.tool_calls ?? [];
    const b = sent.tool_calls ?? [];
    if (a.length !== b.length) return `it has ${b.length} tool call(s) where the answer had ${a.length}`;
    for (let k = 0; k < a.length; k++) {
      if (a[k].function.name !== b[k].function.name)
        return `tool call ${k} names ${b[k].function.name}, not ${a[k].function.name}`;
      if (!sameJson(argumentsValue(a[k].function.arguments), argumentsValue(b[k].function.arguments)))
        return `tool call ${k} (${a[k].function.name}) has other arguments`;
    }
    return undefined;
  }
  if (contentText(held.content).trim() !== contentText(sent.content).trim()) return `its ${held.role} text was edited`;
  // Images compare by content hash (requestImages.ts puts it on each part).
  const heldImages = contentImages(held.content).map((part) => part.sha256 ?? part.base64);
  const sentImages = contentImages(sent.content).map((part) => part.sha256 ?? part.base64);
  if (JSON.stringify(heldImages) !== JSON.stringify(sentImages)) return `its ${held.role} images differ`;
  if (held.role === 'tool' && sent.role === 'tool' && held.tool_call_id !== sent.tool_call_id)
    return 'it answers another tool call';
  return undefined;
}

/** Compares a request's messages and tools with the sequence's (see above). */
export function matchHistory(
  held: readonly ChatMessage[],
  heldTools: readonly ToolSpec[],
  sent: readonly ChatMessage[],
  sentTools: readonly ToolSpec[],
): HistoryMatch {
  if (JSON.stringify(heldTools) !== JSON.stringify(sentTools))
    return { kind: 'split', reason: 'the request has other tools than the conversation so far' };
  if (sent.length < held.length)
    return {
      kind: 'split',
      reason: `the request has ${sent.length} messages, fewer than the ${held.length} of the conversation so far (turns dropped or summarised)`,
    };
  for (let i = 0; i < held.length; i++) {
    const why = messageDifference(held[i], sent[i]);
    if (why) return { kind: 'split', reason: `message ${i} (${held[i].role}) differs: ${why}` };
  }
  if (sent.length === held.length)
    return { kind: 'split', reason: 'the request adds no message to the conversation so far (it was sent again)' };
  return { kind: 'extend', newMessages: sent.slice(held.length) };
}
