import { contentText, type ChatMessage } from '../../contract/protocol/chatMessages';
import type { DatasetRow } from '../../foundations/data/row';
import type { ToolCallFormat } from '../../pipeline/rollout/formats/toolCallFormat';
import { readErrorObservation } from '../../pipeline/rollout/readErrorObservation';
import type { ToolCallResult, Trajectory, TrajectoryTurn } from '../../pipeline/rollout/trajectory';
import { textResult } from '../../foundations/tools/result';
import type { ToolSet } from '../../foundations/tools/toolSet';
import { readTurn } from '../verl/response';

/**
 * A trajectory rebuilt from chat messages alone — what another trainer (verl) can tell us of a
 * rollout — so the config's own rewards can score it: the row's prompt, then the generated part
 * as assistant turns and tool results.
 *
 * An assistant message's calls are its `tool_calls` when it has them, otherwise what the
 * config's tool-call format reads in its text (a call the format cannot read is a `parse`
 * failure, as in our loop). The tool messages after it answer its calls in order. A result that
 * reads as one of our error observations is that error (readErrorObservation); otherwise the call
 * succeeded with the text as its result, and the `data` the tool returned when `dataFor` knows it
 * (serve-tools remembers the calls it served; without it a process reward that reads `data` sees none). Arguments of successful calls are parsed by the tool's own
 * schema, as the reward hooks expect them. There are no tokens.
 */
export function trajectoryFromMessages<Row extends DatasetRow>(
  row: Row,
  generated: readonly ChatMessage[],
  options: {
    format: ToolCallFormat;
    tools: ToolSet;
    index?: number;
    dataFor?: (name: string, args: unknown) => unknown;
  },
): Trajectory<Row> {
  const turns: TrajectoryTurn[] = row.messages.map((m, i) => ({ index: i, role: m.role, tokenStart: 0, tokenEnd: 0 }));
  const calls: ToolCallResult[] = [];
  let assistantTurns = 0;
  let pending: ToolCallResult[] = [];
  generated.forEach((message, m) => {
    const index = turns.length;
    if (message.role === 'assistant') {
      const read = callsOf(message, options.format, m === generated.length - 1);
      const turnCalls = read.calls.map((parsed, k) => unansweredCall(parsed, assistantTurns, k, index));
      // A last turn whose unreadable call was dropped (readTurn) was cut by the budget.
      const cut = read.cut;
      turns.push({
        index,
        role: 'assistant',
        tokenStart: 0,
        tokenEnd: 0,
        finish: cut ? 'length' : turnCalls.length ? 'tool_call' : 'eos',
        assistantTurn: assistantTurns++,
        content: contentText(message.content),
        calls: turnCalls,
      });
      for (const call of turnCalls) calls.push(call);
      pending = [...turnCalls];
    } else if (message.role === 'tool') {
      turns.push({ index, role: 'tool', tokenStart: 0, tokenEnd: 0 });
      const call = pending.shift();
      if (call) answer(call, contentText(message.content), options.tools, options.dataFor);
    } else {
      turns.push({ index, role: message.role, tokenStart: 0, tokenEnd: 0 });
    }
  });
  const lastTurn = turns[turns.length - 1];
  const last = generated[generated.length - 1];
  const finishReason =
    last?.role === 'assistant' && lastTurn.finish === 'eos'
      ? 'answered'
      : lastTurn.finish === 'length'
        ? 'max_total_tokens'
        : 'max_turns';
  return {
    index: options.index ?? 0,
    rowId: row.id,
    group: options.index ?? 0,
    sample: 0,
    row,
    prompt: contentText([...row.messages].reverse().find((m) => m.role === 'user')?.content ?? ''),
    messages: [...row.messages, ...generated],
    ids: [],
    mask: [],
    logprobs: [],
    entropies: [],
    promptLength: 0,
    turns,
    calls,
    finishReason,
    historyRewrites: [],
  };
}

interface ReadCall {
  name?: string;
  arguments?: unknown;
  raw: string;
  parseError?: string;
}

/** A call as read from its turn, before a tool message answers it. */
function unansweredCall(parsed: ReadCall, turn: number, index: number, turnIndex: number): ToolCallResult {
  return {
    turn,
    index,
    ...(parsed.name !== undefined ? { name: parsed.name } : {}),
    ...(parsed.arguments !== undefined ? { arguments: parsed.arguments } : {}),
    raw: parsed.raw,
    observation: '',
    truncated: false,
    ...(parsed.parseError !== undefined ? { error: { kind: 'parse' as const, message: parsed.parseError } } : {}),
    latencyMs: 0,
    turnIndex,
    tokenEnd: 0,
    logs: [],
  };
}

function callsOf(
  message: Extract<ChatMessage, { role: 'assistant' }>,
  format: ToolCallFormat,
  last: boolean,
): { calls: ReadCall[]; cut: boolean } {
  if (message.tool_calls?.length) {
    const calls = message.tool_calls.map((c) => {
      let args: unknown = c.function.arguments;
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          // Left as written: the tool's schema reports that an object was expected.
        }
      }
      return {
        name: c.function.name,
        arguments: args,
        raw: JSON.stringify({ name: c.function.name, arguments: c.function.arguments }),
      };
    });
    return { calls, cut: false };
  }
  const { calls, cut } = readTurn(format, contentText(message.content), last);
  return {
    calls: calls.map(({ name, arguments: args, raw, parseError }) => ({
      ...(name !== undefined ? { name } : {}),
      ...(args !== undefined ? { arguments: args } : {}),
      raw,
      ...(parseError !== undefined ? { parseError } : {}),
    })),
    cut,
  };
}

function answer(
  call: ToolCallResult,
  observation: string,
  tools: ToolSet,
  dataFor?: (name: string, args: unknown) => unknown,
): void {
  call.observation = observation;
  if (call.error) return;
  const error = readErrorObservation(observation);
  if (error) {
    call.error = error;
    return;
  }
  const tool = call.name !== undefined ? tools.get(call.name) : undefined;
  if (tool) {
    const parsed = tool.parameters.safeParse(call.arguments);
    if (parsed.success) call.arguments = parsed.data;
  }
  const data = call.name !== undefined ? dataFor?.(call.name, call.arguments) : undefined;
  call.result = textResult(observation, data);
}
