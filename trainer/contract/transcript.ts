/**
 * The transcript language: one trajectory as readable text. The debugger shows it as a
 * virtual document (its stack frames point at the lines this module reports) and a CLI can
 * export it; the TextMate grammar in syntaxes/rollout-transcript.tmLanguage.json colours it.
 * Pure: no Node or vscode imports, so the extension, the trainer and webviews can all use it.
 *
 *   ═══ step 1 · #3 · row q-00100 · group 1 / sample 1 ═══
 *   prompt: In which city is the organisation that Ada Brenner founded headquartered?
 *   finish: answered · answer: Veldmark
 *   rewards: outcome 1.00 · process 0.20 · total 1.20 · advantage +0.87
 *   components: exact_match 1.00 · search_hit 0.20
 *   tokens: prompt 58 · response 41 · total 120
 *
 *   ── assistant (turn 2) ─ 41 tokens · logprob mean -0.32 min -4.10 · entropy 0.81 · tool_call ──
 *   <think>…</think>
 *   <tool_call>
 *   {"name": "search", "arguments": {"query": "Ada Brenner founded"}}
 *   </tool_call>
 *   ⟨call 0 search · process reward +0.20 · 12 ms⟩
 *   …
 *   ── end ──
 *   ⟨answered · outcome 1.00 · process 0.20 · total 1.20 · advantage +0.87⟩
 *
 * Turn texts appear exactly as the model wrote them (tags included); annotations sit on their
 * own lines between ⟨ and ⟩, characters a chat template does not produce, so the grammar can
 * tell them from model text.
 */
import type { RunStatus, ToolCallRecord, TrajectoryRecord, TurnRecord } from './protocol/runStore';

export interface TranscriptRenderOptions {
  /** Digits after the decimal point for rewards and statistics (default 2). */
  digits?: number;
  /** Longer turn texts are cut and say how much was left out (default: no limit). */
  maxTurnChars?: number;
  /**
   * The trajectory is a live snapshot whose step will never be recorded: what ended the run
   * first ("the run stopped", "the trainer exited"). What was still unknown — a call's result,
   * the finish, the rewards — then says it was never known, instead of "not run yet" and
   * "pending", which would promise something that is not coming.
   */
  endedBy?: string;
}

/** Where one tool call sits in the text, 0-based lines. */
export interface TranscriptCallLines {
  turn: number;
  /** Position among the turn's calls. */
  call: number;
  /** The line where the call begins (`<tool_call>`, or the turn header when it cannot be found). */
  line: number;
  /** The line of the call's annotation (result, error, latency, process reward). */
  resultLine: number;
}

export interface RenderedTranscript {
  text: string;
  /** 0-based line of each turn's header, indexed like `trajectory.turns`. */
  turnLines: number[];
  callLines: TranscriptCallLines[];
  /** 0-based line of the closing annotation (finish reason and rewards). */
  endLine: number;
}

export function renderTranscript(
  trajectory: TrajectoryRecord,
  options: TranscriptRenderOptions = {},
): RenderedTranscript {
  const digits = options.digits ?? 2;
  const fixed = (x: number) => formatRewardNumber(x, digits, false);
  const signed = (x: number) => formatRewardNumber(x, digits, true);
  const lines: string[] = [];
  const turnLines: number[] = [];
  const callLines: TranscriptCallLines[] = [];

  const t = trajectory;
  const endedBy = t.inFlight ? options.endedBy : undefined;
  lines.push(`═══ step ${t.step} · #${t.index} · row ${t.rowId} · group ${t.group} / sample ${t.sample} ═══`);
  if (endedBy)
    lines.push(
      `note: ${endedBy} before step ${t.step} was recorded; this is the trajectory as the debugger last saw it`,
    );
  lines.push(`prompt: ${oneLine(t.prompt)}`);
  lines.push(`finish: ${finishText(t, endedBy)}${t.answer !== undefined ? ` · answer: ${oneLine(t.answer)}` : ''}`);
  lines.push(`rewards: ${rewardSummary(t, fixed, signed, endedBy)}`);
  const components = Object.entries(t.rewards.components);
  if (components.length)
    lines.push(`components: ${components.map(([name, value]) => `${name} ${fixed(value)}`).join(' · ')}`);
  lines.push(`tokens: prompt ${t.lengths.prompt} · response ${t.lengths.response} · total ${t.lengths.total}`);

  for (const turn of t.turns) {
    lines.push('');
    turnLines.push(lines.length);
    lines.push(turnHeader(turn, fixed));
    const body = clip(turn.text, options.maxTurnChars);
    const bodyStart = lines.length;
    lines.push(...body.split('\n'));
    for (const call of turn.toolCalls ?? []) {
      const line = findCallLine(lines, bodyStart, call.index) ?? turnLines[turnLines.length - 1];
      callLines.push({ turn: turn.index, call: call.index, line, resultLine: lines.length });
      lines.push(callAnnotation(call, signed, endedBy));
    }
  }
  lines.push('');
  lines.push('── end ──');
  const endLine = lines.length;
  lines.push(
    `⟨${finishText(t, endedBy)} · ${t.inFlight ? (endedBy ? 'rewards never computed' : 'rewards pending') : rewardSummary(t, fixed, signed)}⟩`,
  );
  return { text: lines.join('\n') + '\n', turnLines, callLines, endLine };
}

/** What ended a run whose step in flight was never recorded (`endedBy`), by the status its run.json says. */
export function runEndedPhrase(status: RunStatus): string {
  switch (status) {
    case 'stopped':
      return 'the run stopped';
    case 'failed':
      return 'the run failed';
    case 'finished':
      return 'the run finished';
    case 'running':
    case 'interrupted':
      // A trainer that exited (or was killed) before it could mark its run.
      return 'the training ended';
  }
}

/** `── assistant (turn 2) ─ 41 tokens · logprob mean -0.32 min -4.10 · entropy 0.81 · tool_call ──` */
export function turnHeader(turn: TurnRecord, fixed: (x: number) => string): string {
  const facts = [`${turn.tokenEnd - turn.tokenStart} tokens`];
  if (turn.logprob) facts.push(`logprob mean ${fixed(turn.logprob.mean)} min ${fixed(turn.logprob.min)}`);
  if (turn.entropy) facts.push(`entropy ${fixed(turn.entropy.mean)}`);
  if (turn.finish) facts.push(turn.finish);
  return `── ${turn.role} (turn ${turn.index}) ─ ${facts.join(' · ')} ──`;
}

/**
 * `⟨call 0 search · process reward +0.20 · 12 ms⟩` or `⟨call 0 search · error: timeout — … · 5003 ms⟩`;
 * a call that has not run: `⟨call 0 search · not run yet⟩`, or, when the run ended first (`endedBy`),
 * `⟨call 0 search · result never known: the run stopped first⟩`.
 */
export function callAnnotation(call: ToolCallRecord, signed: (x: number) => string, endedBy?: string): string {
  const parts = [`call ${call.index}${call.name !== undefined ? ` ${call.name}` : ''}`];
  if (call.pending) return `⟨${parts[0]} · ${endedBy ? `result never known: ${endedBy} first` : 'not run yet'}⟩`;
  if (call.error) parts.push(`error: ${call.error.kind} — ${firstLine(call.error.message)}`);
  if (call.processReward !== undefined) parts.push(`process reward ${signed(call.processReward)}`);
  if (call.truncated) parts.push('result truncated');
  parts.push(`${Math.round(call.latencyMs)} ms`);
  return `⟨${parts.join(' · ')}⟩`;
}

/** A live trajectory still being rolled out has no final finish reason yet (and never gets one when the run ended first). */
function finishText(t: TrajectoryRecord, endedBy?: string): string {
  if (!t.inFlight || t.inFlight.ended) return t.finishReason;
  return endedBy ? 'not finished' : 'in progress';
}

function rewardSummary(
  t: TrajectoryRecord,
  fixed: (x: number) => string,
  signed: (x: number) => string,
  endedBy?: string,
): string {
  if (t.inFlight && endedBy) return `never computed (${endedBy} before step ${t.step} was scored)`;
  if (t.inFlight) return 'pending (scored when the whole batch has finished its rollout)';
  const parts = [
    `outcome ${fixed(t.rewards.outcome)}`,
    `process ${fixed(t.rewards.process)}`,
    `total ${fixed(t.rewards.total)}`,
  ];
  if (t.advantage !== undefined) parts.push(`advantage ${signed(t.advantage)}`);
  return parts.join(' · ');
}

/** The line of the call's `<tool_call>` tag: the n-th one in the turn's body. */
function findCallLine(lines: readonly string[], from: number, callIndex: number): number | undefined {
  let seen = -1;
  for (let i = from; i < lines.length; i++) {
    if (lines[i].includes('<tool_call>') && ++seen === callIndex) return i;
  }
  return undefined;
}

export function formatRewardNumber(x: number, digits: number, signed: boolean): string {
  if (!Number.isFinite(x)) return String(x);
  const text = x.toFixed(digits);
  // -0.00 reads as a negative reward; show it as zero.
  if (Number(text) === 0) return (signed ? '+' : '') + (0).toFixed(digits);
  return signed && x > 0 ? `+${text}` : text;
}

/** Each run of whitespace that breaks a line becomes one ⏎, in one pass (a pattern with `\n` between two `\s*` rescans long runs of spaces). */
function oneLine(text: string): string {
  return text.replace(/\s+/g, (run) => (run.includes('\n') ? ' ⏎ ' : run));
}

function firstLine(text: string): string {
  return text.split('\n')[0];
}

function clip(text: string, max: number | undefined): string {
  if (max === undefined || text.length <= max) return text;
  return `${text.slice(0, max)}… (${text.length - max} more characters)`;
}
