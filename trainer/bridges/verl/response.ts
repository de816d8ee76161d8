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
 *
 * The text is untrusted (it arrives in `/reward` requests), so it is read by linear scans, not by
 * a regular expression: the obvious one backtracks exponentially on repeated result blocks.
 */

const EMPTY_TURN = /^(?:<think>\s*<\/think>)?\s*$/;

export function splitVerlResponse(text: string): ChatMessage[] {
  const messages: ChatMessage[] = [];
  let at = 0;
  for (const block of toolBlocks(text)) {
    messages.push({ role: 'assistant', content: text.slice(at, block.start) });
    for (const result of block.results) messages.push({ role: 'tool', content: result });
    at = block.end;
  }
  // The last turn: what the policy wrote after the last results. Nothing, or only the empty
  // thinking block Qwen3's generation prompt adds (template text), means it wrote nothing there.
  const tail = text.slice(at);
  if (!EMPTY_TURN.test(tail) || messages.length === 0) messages.push({ role: 'assistant', content: tail });
  return messages;
}

/**
 * The calls of a generated turn, read by the tool-call format, and whether it was cut. The last
 * turn, when no tool result follows it, was cut by the budget or ended the episode: if it holds a
 * call that cannot be read it was cut mid-call, and a cut turn has no calls — in our loop (a turn
 * ended by length is not parsed) and in verl's (the response budget is checked before calls are
 * extracted). The text is parsed once: a turn can hold a /reward body's worth of calls.
 */
export function readTurn(
  format: ToolCallFormat,
  text: string,
  unansweredLast: boolean,
): { calls: ParsedToolCall[]; cut: boolean } {
  const calls = format.parse(text);
  const cut = unansweredLast && calls.some((c) => c.parseError !== undefined);
  return { calls: cut ? [] : calls, cut };
}

const USER = 'user\n';
const OPEN = '<tool_response>\n';
const CLOSE = '\n</tool_response>';
const ASSISTANT = 'assistant\n';

/** A stretch of template text between two assistant turns: `[start, end)` and the results in it. */
interface ToolBlock {
  start: number;
  end: number;
  results: string[];
}

/**
 * Every block `\n?user\n(<tool_response>\n…\n</tool_response>\n?)+assistant\n`, leftmost first and
 * not overlapping, found exactly where that regular expression (lazy result bodies) finds them.
 * A block's results each end at the first `\n</tool_response>` that is followed by another result
 * or by `assistant\n`; `blockEnds` works that out once per closing marker, right to left.
 */
function toolBlocks(text: string): ToolBlock[] {
  const ends = blockEnds(text);
  const blocks: ToolBlock[] = [];
  let at = 0;
  for (let user = text.indexOf(USER + OPEN); user >= 0; user = text.indexOf(USER + OPEN, at)) {
    const end = ends.from(user + USER.length + OPEN.length);
    if (end < 0) {
      at = user + 1;
      continue;
    }
    const start = user > at && text[user - 1] === '\n' ? user - 1 : user;
    blocks.push({ start, end, results: toolResults(text, user + USER.length, end - ASSISTANT.length) });
    at = end;
  }
  return blocks;
}

/**
 * For a result body starting at `bodyStart`: where its block ends (after `assistant\n`), or -1
 * when no closing marker from there on leads to one. Each closing marker's answer depends only on
 * the markers after it, so all are computed once, last first: linear in the text.
 */
function blockEnds(text: string): { from(bodyStart: number): number } {
  const closes: number[] = [];
  for (let c = text.indexOf(CLOSE); c >= 0; c = text.indexOf(CLOSE, c + 1)) closes.push(c);
  const endAfter = new Array<number>(closes.length).fill(-1);
  const firstCloseFrom = (position: number): number => {
    let low = 0;
    let high = closes.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (closes[mid] < position) low = mid + 1;
      else high = mid;
    }
    return low;
  };
  const from = (bodyStart: number): number => {
    const i = firstCloseFrom(bodyStart);
    return i < closes.length ? endAfter[i] : -1;
  };
  for (let i = closes.length - 1; i >= 0; i--) {
    let next = closes[i] + CLOSE.length;
    if (text[next] === '\n') next++;
    if (text.startsWith(ASSISTANT, next)) endAfter[i] = next + ASSISTANT.length;
    else {
      // Another result follows: the block ends where that one's does; failing that, this body
      // runs on to the next closing marker (what the regular expression's backtracking tries).
      const nested = text.startsWith(OPEN, next) ? from(next + OPEN.length) : -1;
      endAfter[i] = nested >= 0 ? nested : i + 1 < closes.length ? endAfter[i + 1] : -1;
    }
  }
  return { from };
}

/** The bodies of `<tool_response>\n…\n</tool_response>` in `text[from, to)`, each ending at the first closing marker. */
function toolResults(text: string, from: number, to: number): string[] {
  const results: string[] = [];
  let at = from;
  for (let open = text.indexOf(OPEN, at); open >= 0 && open < to; open = text.indexOf(OPEN, at)) {
    const close = text.indexOf(CLOSE, open + OPEN.length);
    if (close < 0 || close + CLOSE.length > to) break;
    results.push(text.slice(open + OPEN.length, close));
    at = close + CLOSE.length;
  }
  return results;
}
