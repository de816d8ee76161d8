import { contentText, type ChatMessage } from '../../contract/protocol/chatMessages';
import type { TrajectoryRecord } from '../../contract/protocol/runStore';
import { decodeFloat32, decodeInt32, decodeUint8 } from '../../contract/protocol/tokens';
import type { DatasetRow } from '../../foundations/data/row';
import type { ToolCallResult, Trajectory, TrajectoryTurn } from '../../pipeline/rollout/trajectory';
import { textResult } from '../../foundations/tools/result';

/**
 * The trajectories Evaluate on Samples scores a reward on, without a model:
 *
 * - a *reference* trajectory: a dataset row's prompt answered by a stand-in final turn (the
 *   row's gold answer in `<answer>` tags, or no answer at all) — does the reward tell them apart?
 * - a *recorded* trajectory: one a run wrote to its run store, rebuilt as the `Trajectory` the
 *   reward saw in training, paired with its dataset row.
 *
 * Neither has a tokenizer at hand: reference trajectories carry no tokens, and recorded ones
 * carry the turn texts and token arrays of the record.
 */

/** The text of the row's last user message (what `Trajectory.prompt` holds). */
function lastUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--)
    if (messages[i].role === 'user') return contentText(messages[i].content);
  return '';
}

export function referenceTrajectory<Row extends DatasetRow>(
  row: Row,
  finalText: string,
  index: number,
): Trajectory<Row> {
  const prompt: TrajectoryTurn[] = row.messages.map((m, i) => ({ index: i, role: m.role, tokenStart: 0, tokenEnd: 0 }));
  const answer: TrajectoryTurn = {
    index: prompt.length,
    role: 'assistant',
    tokenStart: 0,
    tokenEnd: 0,
    finish: 'eos',
    assistantTurn: 0,
    content: finalText,
    calls: [],
  };
  return {
    index,
    rowId: row.id,
    group: index,
    sample: 0,
    row,
    prompt: lastUserText(row.messages),
    messages: [...row.messages, { role: 'assistant', content: finalText }],
    ids: [],
    mask: [],
    logprobs: [],
    entropies: [],
    promptLength: 0,
    turns: [...prompt, answer],
    calls: [],
    finishReason: 'answered',
    historyRewrites: [],
  };
}

/** A chat template's end-of-turn or end-of-text token at the end of a generated turn's text. */
const TRAILING_STOP = /(?:<\|[A-Za-z_]+\|>|<\/s>|<eos>|<end_of_turn>)\s*$/;

/** A generated turn's text as the agent loop kept it (`content`): without the stop token it ended with. */
function assistantContent(text: string): string {
  return text.replace(TRAILING_STOP, '');
}

export function recordedTrajectory<Row extends DatasetRow>(record: TrajectoryRecord, row: Row): Trajectory<Row> {
  const calls: ToolCallResult[] = [];
  let assistantTurns = 0;
  const turns: TrajectoryTurn[] = record.turns.map((t, position) => {
    const turn: TrajectoryTurn = { index: t.index, role: t.role, tokenStart: t.tokenStart, tokenEnd: t.tokenEnd };
    // Assistant turns after the prompt are the generated ones (a prompt may hold an assistant message too).
    if (t.role !== 'assistant' || t.finish === undefined) return turn;
    turn.finish = t.finish;
    turn.assistantTurn = assistantTurns++;
    turn.content = assistantContent(t.text);
    turn.calls = (t.toolCalls ?? []).map((c) => {
      const call: ToolCallResult = {
        turn: turn.assistantTurn!,
        index: c.index,
        ...(c.name !== undefined ? { name: c.name } : {}),
        ...(c.arguments !== undefined ? { arguments: c.arguments } : {}),
        raw: c.raw,
        observation: c.observation,
        truncated: c.truncated,
        ...(c.error ? { error: c.error } : {}),
        // The record keeps what the policy saw, not the tool's `data`: a successful call's result is its observation text.
        ...(c.error ? {} : { result: textResult(c.observation) }),
        latencyMs: c.latencyMs,
        turnIndex: position,
        tokenEnd: c.tokenEnd,
        logs: c.logs ?? [],
      };
      calls.push(call);
      return call;
    });
    return turn;
  });
  const messages: ChatMessage[] = record.turns.map(
    (t) => ({ role: t.role, content: t.role === 'assistant' ? assistantContent(t.text) : t.text }) as ChatMessage,
  );
  const promptEnd =
    record.turns.find((t) => t.role === 'assistant' && t.finish !== undefined)?.tokenStart ?? record.lengths.prompt;
  return {
    index: record.index,
    rowId: record.rowId,
    group: record.group,
    sample: record.sample,
    row,
    prompt: record.prompt,
    messages,
    ids: Array.from(decodeInt32(record.tokens.ids)),
    mask: Array.from(decodeUint8(record.tokens.mask)),
    logprobs: Array.from(decodeFloat32(record.tokens.logprobs)),
    entropies: record.tokens.entropies ? Array.from(decodeFloat32(record.tokens.entropies)) : [],
    promptLength: promptEnd,
    turns,
    calls,
    finishReason: record.finishReason,
    ...(record.error !== undefined ? { error: record.error } : {}),
    historyRewrites: (record.historyRewrites ?? []).map((r) => ({ ...r })),
  };
}
