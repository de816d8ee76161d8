import type { ChatTemplate } from '../../foundations/models/text/chatTemplate';
import type { DatasetRow } from '../../foundations/data/row';
import type { ChatMessage } from '../../contract/protocol/chatMessages';
import { decodeFloat32, decodeInt32, decodeUint8 } from '../../contract/protocol/tokens';
import { definedFields } from '../../contract/definedFields';
import type { TrajectoryRecord } from '../../contract/protocol/runStore';
import type { ToolResult } from '../../foundations/tools/result';
import type { AgentLoop } from './agentLoop';
import { TextOffsets } from './textOffsets';
import type { ToolCallResult, TrajectoryTurn } from './trajectory';
import { TrajectoryState, type PendingCallState } from './trajectoryState';

/**
 * A recorded trajectory brought back to a point inside it, as the agent loop's state at that
 * point — so the loop can generate the rest again (a re-roll: AgentLoop.continueFrom).
 *
 * Cut points are at turn boundaries of the K-th generated turn:
 *   start  before turn K is generated (after the results of turn K-1's calls)
 *   call   after turn K is generated, before its calls' results: the loop runs the calls again
 *          (live, from a cassette, or answered with an edited result)
 *
 * The prefix is the record's tokens, token for token (ids, mask, log-probs, entropies). The
 * message history the chat template needs to append after it is rebuilt the way the loop built
 * it — the prompt rendered from the row, each generated turn decoded and parsed by the format,
 * each call's observation as a tool message — and checked: the prompt must render to the
 * recorded prompt tokens, and each recorded tool turn must be what the template appends for the
 * rebuilt messages. A prefix that cannot be rebuilt exactly is an error that says where.
 */

export interface CutPoint {
  /** The generated turn (0 = the first). */
  turn: number;
  at: 'start' | 'call';
}

export interface RestoreContext {
  loop: AgentLoop;
  template: ChatTemplate;
  templateKwargs?: Record<string, unknown>;
}

export interface RestoreOptions {
  /** The full result of a call in the prefix (with its `data`, which the record does not keep): from a cassette. */
  priorResult?: ((turn: number, call: number) => ToolResult | undefined) | undefined;
  /** At a `call` cut: arguments that replace what the policy wrote, by call index (the tokens stay the policy's). */
  arguments?: ReadonlyMap<number, unknown> | undefined;
  /**
   * At a `start` cut: messages inserted before the turn — after the previous turn's tool results
   * (the tool turn re-rendered by the template's append path with them), or after the prompt's
   * messages (the prompt rendered with them).
   */
  insert?: readonly ChatMessage[] | undefined;
}

export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

/** The record's generated turns, in order (assistant messages of the prompt are not generated). */
export function generatedTurns(record: TrajectoryRecord): TrajectoryRecord['turns'] {
  return record.turns.filter((t) => t.role === 'assistant' && t.finish !== undefined);
}

/** The token index a cut point stands at. */
export function cutTokenIndex(record: TrajectoryRecord, cut: CutPoint): number {
  const turn = generatedTurns(record)[cut.turn];
  if (!turn)
    throw new RestoreError(
      `trajectory ${record.index} of step ${record.step} has ${generatedTurns(record).length} generated turns; there is no turn ${cut.turn}`,
    );
  return cut.at === 'start' ? turn.tokenStart : turn.tokenEnd;
}

export function restoreState<Row extends DatasetRow>(
  record: TrajectoryRecord,
  row: Row,
  cut: CutPoint,
  index: number,
  context: RestoreContext,
  options: RestoreOptions = {},
): TrajectoryState<Row> {
  const where = `trajectory ${record.index} of step ${record.step}`;
  if (record.images?.length)
    throw new RestoreError(`${where} saw images; re-rolls of vision-language trajectories are not supported yet`);
  const ids = Array.from(decodeInt32(record.tokens.ids));
  const prompt = context.loop.renderPrompt(row);
  const promptLength = record.lengths.prompt;
  const differs =
    prompt.ids.length !== promptLength
      ? Math.min(prompt.ids.length, promptLength)
      : prompt.ids.findIndex((id, i) => id !== ids[i]);
  if (differs >= 0) {
    throw new RestoreError(
      `${where}: row ${row.id} renders to a different prompt now (first difference at token ${differs} of ${promptLength}); the dataset row, system prompt, tools or chat template changed since the run`,
    );
  }
  const insert = options.insert ?? [];
  if (insert.length && cut.at !== 'start')
    throw new RestoreError(`${where}: messages are inserted at the start of a turn, not before a call's results`);
  const inserted =
    insert.length && cut.turn === 0
      ? context.loop.renderPrompt({ ...row, messages: [...row.messages, ...insert] })
      : prompt;
  const state = new TrajectoryState(index, { row, group: record.group, sample: record.sample }, inserted);
  const arrays = {
    ids,
    mask: Array.from(decodeUint8(record.tokens.mask)),
    logprobs: Array.from(decodeFloat32(record.tokens.logprobs)),
    entropies: record.tokens.entropies ? Array.from(decodeFloat32(record.tokens.entropies)) : ids.map(() => 0),
  };
  const turns = generatedTurns(record);
  cutTokenIndex(record, cut);
  for (let g = 0; g <= cut.turn; g++) {
    if (g === cut.turn && cut.at === 'start') break;
    const turn = appendGenerated(state, arrays, turns[g], g, context);
    if (g === cut.turn) {
      state.calls = pendingCalls(state, turn, context, options.arguments, where);
      break;
    }
    appendRecordedResults(
      state,
      record,
      arrays,
      turns[g],
      turns[g + 1],
      turn,
      context,
      { ...options, insert: g === cut.turn - 1 ? insert : [] },
      where,
    );
  }
  state.pending = [...state.trajectory.ids];
  state.pendingImages = [];
  state.trajectory.historyRewrites = (record.historyRewrites ?? [])
    .filter((r) => r.afterTurn < state.trajectory.turns.length)
    .map((r) => ({ ...r }));
  return state;
}

interface TokenArrays {
  ids: number[];
  mask: number[];
  logprobs: number[];
  entropies: number[];
}

/** The recorded generated turn, appended as the loop appended it (recordTurn). */
function appendGenerated<Row extends DatasetRow>(
  state: TrajectoryState<Row>,
  arrays: TokenArrays,
  recorded: TrajectoryRecord['turns'][number],
  g: number,
  context: RestoreContext,
): TrajectoryTurn {
  const t = state.trajectory;
  if (recorded.tokenStart !== t.ids.length)
    throw new RestoreError(
      `trajectory ${t.index}: generated turn ${g} starts at token ${recorded.tokenStart}, but the rebuilt prefix ends at ${t.ids.length}`,
    );
  for (let i = recorded.tokenStart; i < recorded.tokenEnd; i++) {
    t.ids.push(arrays.ids[i]);
    t.mask.push(arrays.mask[i]);
    t.logprobs.push(arrays.logprobs[i]);
    t.entropies.push(arrays.entropies[i]);
  }
  const tokens = arrays.ids.slice(recorded.tokenStart, recorded.tokenEnd);
  const tokenizer = context.template.tokenizer;
  const endIds = new Set([context.template.endOfTurnId, ...tokenizer.eosTokenIds]);
  const textIds = endIds.has(tokens[tokens.length - 1]) ? tokens.slice(0, -1) : tokens;
  const content = tokenizer.decode(textIds);
  const turn: TrajectoryTurn = {
    index: t.turns.length,
    role: 'assistant',
    tokenStart: recorded.tokenStart,
    tokenEnd: recorded.tokenEnd,
    assistantTurn: g,
    content,
    ...definedFields({ finish: recorded.finish }),
  };
  const format = context.loop.format;
  const message: ChatMessage =
    recorded.finish === 'length'
      ? { role: 'assistant', content }
      : format.assistantMessage(content, format.parse(content));
  t.messages.push(message);
  t.turns.push(turn);
  state.lastTurn = turn;
  state.assistantTurns = g + 1;
  return turn;
}

/** The calls of the cut turn, waiting to run (the loop's toolRound), with edited arguments where given. */
function pendingCalls<Row extends DatasetRow>(
  state: TrajectoryState<Row>,
  turn: TrajectoryTurn,
  context: RestoreContext,
  edits: ReadonlyMap<number, unknown> | undefined,
  where: string,
): PendingCallState[] {
  const parsed = turn.finish === 'length' ? [] : context.loop.format.parse(turn.content ?? '');
  if (parsed.length === 0)
    throw new RestoreError(
      `${where}: generated turn ${turn.assistantTurn} made no tool call, so there is no point before its results; cut at the start of a turn instead`,
    );
  for (const call of edits?.keys() ?? [])
    if (call >= parsed.length)
      throw new RestoreError(
        `${where}: turn ${turn.assistantTurn} has ${parsed.length} call(s); there is no call ${call} to edit`,
      );
  const textIds = state.trajectory.ids.slice(turn.tokenStart, turn.tokenEnd);
  const offsets = new TextOffsets(context.template.tokenizer, textIds);
  return parsed.map((call, index) => ({
    parsed: edits?.has(index) ? { ...call, arguments: edits.get(index), parseError: undefined } : call,
    index,
    tokenEnd: turn.tokenStart + offsets.tokenAt(Math.max(call.start, call.end - 1)),
  }));
}

/** The results of a prefix turn's calls as recorded, and the tool turn after them — checked against what the template appends for them. */
function appendRecordedResults<Row extends DatasetRow>(
  state: TrajectoryState<Row>,
  record: TrajectoryRecord,
  arrays: TokenArrays,
  recorded: TrajectoryRecord['turns'][number],
  next: TrajectoryRecord['turns'][number],
  turn: TrajectoryTurn,
  context: RestoreContext,
  options: RestoreOptions,
  where: string,
): void {
  const t = state.trajectory;
  const g = turn.assistantTurn!;
  turn.calls = (recorded.toolCalls ?? []).map((call): ToolCallResult =>
    definedFields({
      turn: g,
      turnIndex: turn.index,
      index: call.index,
      name: call.name,
      arguments: call.arguments,
      raw: call.raw,
      observation: call.observation,
      truncated: call.truncated,
      error: call.error,
      result: call.error
        ? undefined
        : (options.priorResult?.(g, call.index) ?? { content: [{ type: 'text', text: call.observation }] }),
      latencyMs: call.latencyMs,
      tokenEnd: call.tokenEnd,
      logs: call.logs ?? [],
    }),
  );
  t.calls.push(...turn.calls);
  const toolMessages: ChatMessage[] = turn.calls.map((call) => ({
    role: 'tool',
    content: call.observation,
    ...definedFields({ name: call.name }),
  }));
  const recordedIds = arrays.ids.slice(recorded.tokenEnd, next.tokenStart);
  const { template } = context;
  const insert = options.insert ?? [];
  const closing = t.ids[t.ids.length - 1] === template.endOfTurnId ? [] : [template.endOfTurnId];
  const appended = template.appendTokens(
    { messages: t.messages, ids: [...t.ids, ...closing] },
    [...toolMessages, ...insert],
    { tools: context.loop.toolSpecs(), kwargs: context.templateKwargs, onHistoryRewrite: 'keep-tokens' },
  );
  const expected = [...closing, ...appended.ids];
  const at =
    expected.length !== recordedIds.length
      ? Math.min(expected.length, recordedIds.length)
      : expected.findIndex((id, i) => id !== recordedIds[i]);
  // With inserted messages the tool turn is re-rendered (the edit); without, it must be what was recorded.
  if (at >= 0 && !insert.length)
    throw new RestoreError(
      `${where}: the tool results after turn ${g} re-render differently from the recorded tokens (first difference at token ${recorded.tokenEnd + at}); the chat template or the tools changed since the run (record ${record.rowId})`,
    );
  const start = t.ids.length;
  state.appendContext(insert.length ? expected : recordedIds);
  t.messages.push(...toolMessages, ...insert);
  t.turns.push({ index: t.turns.length, role: 'tool', tokenStart: start, tokenEnd: t.ids.length });
}
