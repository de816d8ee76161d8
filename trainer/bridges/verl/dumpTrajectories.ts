import type { Tokenizer } from '../../foundations/models/text/tokenizer';
import { contentText } from '../../contract/protocol/chatMessages';
import type { ToolCallRecord, TrajectoryRecord, TurnRecord } from '../../contract/protocol/runStore';
import { encodeFloat32, encodeInt32, encodeUint8 } from '../../contract/protocol/tokens';
import { HermesFormat } from '../../pipeline/rollout/formats/hermes';
import type { ParsedToolCall } from '../../pipeline/rollout/formats/toolCallFormat';
import { readErrorObservation } from '../../pipeline/rollout/readErrorObservation';
import type { VerlDumpLine } from './dumps';
import { splitVerlResponse, readTurn } from './response';

/**
 * One step of verl's dumps as our trajectory records, so the Trajectories panel and the replay
 * debugger show them: the prompt as its system and user turns (Qwen's layout, special tokens
 * skipped: `system\n…\nuser\n…\nassistant\n`), the response split into assistant and tool turns
 * (splitVerlResponse), the calls read with the Hermes format and answered by the tool results
 * after them, and the rewards the exported reward module returned (`rs_*`; without them, `score`
 * is the total and the outcome).
 *
 * A prompt's samples sit next to each other in verl's batch: each run of equal `input` is a group.
 * The dumps hold text, not tokens: with a tokenizer (`--tokenizer`) each turn's text is
 * tokenised for the token view (an approximation of verl's tokens: special tokens are gone);
 * without one the records carry no tokens. Log-probs and advantages are not dumped by verl.
 */

interface DumpedCall {
  name?: string;
  processReward?: number;
  components?: Record<string, number>;
}

function parseJson<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** The prompt's system and last user message; Qwen3's empty thinking block may follow the generation prompt. */
const PROMPT = /^(?:system\n([\s\S]*?)\n)?user\n([\s\S]*)\nassistant\n(?:<think>\n\n<\/think>\n\n)?$/;

function promptTurns(input: string): { role: 'system' | 'user'; text: string }[] {
  const match = PROMPT.exec(input);
  if (!match) return [{ role: 'user', text: input }];
  return [
    ...(match[1] !== undefined ? [{ role: 'system' as const, text: match[1] }] : []),
    { role: 'user', text: match[2] },
  ];
}

export function verlStepRecords(
  lines: readonly VerlDumpLine[],
  step: number,
  tokenizer?: Tokenizer,
): TrajectoryRecord[] {
  const format = new HermesFormat();
  let group = -1;
  let sample = 0;
  return lines.map((line, index) => {
    if (index === 0 || line.input !== lines[index - 1].input) {
      group++;
      sample = 0;
    } else sample++;
    const { prompt, turns, texts } = recordTurns(line, format);
    const lastTurn = turns[turns.length - 1];
    const tokens = tokenize(texts, turns, tokenizer);
    const components = parseJson<Record<string, number>>(line.rs_components) ?? {};
    const score = line.score ?? 0;
    return {
      step,
      index,
      rowId: line.rs_row_id ?? `verl-${step}-${group}`,
      group,
      sample,
      prompt: prompt[prompt.length - 1].text,
      turns,
      finishReason: finishReasonOf(lastTurn),
      ...(line.rs_answer ? { answer: line.rs_answer } : {}),
      rewards: {
        outcome: line.rs_outcome ?? score,
        process: line.rs_process ?? 0,
        total: score,
        components: Object.keys(components).length ? components : { score },
      },
      lengths: tokens.lengths,
      tokens: tokens.tokens,
    };
  });
}

/** The prompt's turns, then the response's assistant and tool turns; each call is answered by the tool turn after it. */
function recordTurns(line: VerlDumpLine, format: HermesFormat) {
  const dumpedCalls = parseJson<DumpedCall[]>(line.rs_calls) ?? [];
  let callCursor = 0;
  const turns: TurnRecord[] = [];
  const texts: { text: string; policy: boolean }[] = [];
  const add = (turn: Omit<TurnRecord, 'index' | 'tokenStart' | 'tokenEnd'>, policy: boolean) => {
    turns.push({ index: turns.length, tokenStart: 0, tokenEnd: 0, ...turn });
    texts.push({ text: turn.text, policy });
  };
  const prompt = promptTurns(line.input);
  for (const p of prompt) add({ role: p.role, text: p.text }, false);
  const messages = splitVerlResponse(line.output);
  let pending: ToolCallRecord[] = [];
  messages.forEach((message, m) => {
    if (message.role === 'assistant') {
      const isLast = m === messages.length - 1;
      const { calls, cut } = readTurn(format, contentText(message.content), isLast);
      const toolCalls = calls.map((c, k) => toolCallRecord(c, k, dumpedCalls[callCursor++]));
      add(
        {
          role: 'assistant',
          text: contentText(message.content),
          finish: cut ? 'length' : toolCalls.length ? 'tool_call' : isLast ? 'eos' : 'stop',
          ...(toolCalls.length ? { toolCalls } : {}),
        },
        true,
      );
      pending = [...toolCalls];
    } else {
      add({ role: 'tool', text: contentText(message.content) }, false);
      const call = pending.shift();
      if (call) {
        call.observation = contentText(message.content);
        const error = call.error ? undefined : readErrorObservation(contentText(message.content));
        if (error) call.error = error;
      }
    }
  });
  return { prompt, turns, texts };
}

/** A parsed call as a record, with the reward the exported reward module dumped for it. */
function toolCallRecord(c: ParsedToolCall, k: number, dumped: DumpedCall | undefined): ToolCallRecord {
  return {
    index: k,
    ...(c.name !== undefined ? { name: c.name } : {}),
    ...(c.arguments !== undefined ? { arguments: c.arguments } : {}),
    raw: c.raw,
    observation: '',
    truncated: false,
    ...(c.parseError !== undefined ? { error: { kind: 'parse' as const, message: c.parseError } } : {}),
    latencyMs: 0,
    ...(dumped?.processReward !== undefined ? { processReward: dumped.processReward } : {}),
    ...(dumped?.components && Object.keys(dumped.components).length ? { rewardComponents: dumped.components } : {}),
    tokenEnd: 0,
  };
}

function finishReasonOf(lastTurn: TurnRecord): TrajectoryRecord['finishReason'] {
  return lastTurn.role === 'assistant' && lastTurn.finish === 'eos'
    ? 'answered'
    : lastTurn.finish === 'length'
      ? 'max_total_tokens'
      : 'max_turns';
}

function tokenize(
  texts: readonly { text: string; policy: boolean }[],
  turns: TurnRecord[],
  tokenizer: Tokenizer | undefined,
): Pick<TrajectoryRecord, 'tokens' | 'lengths'> {
  if (!tokenizer)
    return { tokens: { ids: '', pieces: [], mask: '', logprobs: '' }, lengths: { prompt: 0, response: 0, total: 0 } };
  const ids: number[] = [];
  const mask: number[] = [];
  let promptLength = 0;
  texts.forEach(({ text, policy }, i) => {
    const turnIds = tokenizer.encode(text, { addSpecialTokens: false });
    turns[i].tokenStart = ids.length;
    ids.push(...turnIds);
    mask.push(...turnIds.map(() => (policy ? 1 : 0)));
    turns[i].tokenEnd = ids.length;
    if (turns[i].role === 'system' || turns[i].role === 'user') promptLength = ids.length;
    for (const call of turns[i].toolCalls ?? []) call.tokenEnd = Math.max(turns[i].tokenStart, ids.length - 1);
  });
  return {
    tokens: {
      ids: encodeInt32(ids),
      pieces: tokenizer.pieces(ids),
      mask: encodeUint8(mask),
      logprobs: encodeFloat32(new Float32Array(ids.length)),
    },
    lengths: { prompt: promptLength, response: ids.length - promptLength, total: ids.length },
  };
}
