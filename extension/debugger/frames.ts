/**
 * How trajectories read in the debugger: thread names for the CALL STACK, frame names for
 * turns, calls and the end, and which transcript line stands for which stop point (the
 * anchors of transcript breakpoints).
 */
import type { TrajectoryRecord } from '../../trainer/contract/protocol/runStore';
import { renderTranscript } from '../../trainer/contract/transcript';
import type { LinePoint } from './breakpoints/breakpoints';
import type { StopPoint } from './timeline';

/** The transcript lines that stand for the trajectory's stop points, in order. */
export function linePoints(trajectory: TrajectoryRecord): LinePoint[] {
  const { turnLines, callLines, endLine } = renderTranscript(trajectory);
  const points: LinePoint[] = [];
  turnLines.forEach((line, turn) => {
    points.push({ phase: 'turn', turn, call: -1, line });
    for (const c of callLines.filter((c) => c.turn === turn))
      points.push({ phase: 'call', turn, call: c.call, line: c.line });
    for (const c of callLines.filter((c) => c.turn === turn))
      points.push({ phase: 'result', turn, call: c.call, line: c.resultLine });
  });
  points.push({ phase: 'end', turn: trajectory.turns.length, call: -1, line: endLine });
  return points.sort((a, b) => a.line - b.line);
}

export function shorten(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** `#3 q-00100 1/1 — In which city is the organisation that Ada Brenner…` */
export function threadName(t: TrajectoryRecord): string {
  return `#${t.index} ${t.rowId} ${t.group}/${t.sample} — ${shorten(t.prompt, 48)}`;
}

export function turnFrameName(t: TrajectoryRecord, index: number): string {
  const turn = t.turns[index];
  return `${turn.role} (turn ${index})${turn.finish ? ` · ${turn.finish}` : ''}`;
}

export function callFrameName(t: TrajectoryRecord, point: StopPoint): string {
  const call = t.turns[point.turn].toolCalls!.find((c) => c.index === point.call)!;
  const args = call.arguments === undefined ? '' : shorten(JSON.stringify(call.arguments), 60);
  const head = `${call.name ?? '<unparsed call>'}(${args})`;
  if (point.phase === 'call') return `${head} · before it runs`;
  if (call.error) return `${head} → error: ${call.error.kind}`;
  return `${head} → ${Math.round(call.latencyMs)} ms${call.processReward !== undefined ? ` · process reward ${call.processReward >= 0 ? '+' : ''}${call.processReward.toFixed(2)}` : ''}`;
}

export function endFrameName(t: TrajectoryRecord): string {
  if (t.inFlight) return `end · ${t.finishReason} · rewards pending`;
  return `end · ${t.finishReason} · total ${t.rewards.total.toFixed(2)}${t.advantage !== undefined ? ` · advantage ${t.advantage >= 0 ? '+' : ''}${t.advantage.toFixed(2)}` : ''}`;
}
