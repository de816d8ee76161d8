/**
 * The VARIABLES view: scopes of a stack frame (Tool call, Turn, Rewards, Step) and their
 * values as expandable trees. Scopes are plain objects built from the records; any object or
 * array inside gets a handle so VS Code can expand it (a call's arguments become a tree).
 * Each variable carries the expression that reads it from the turn context (`evaluateName`),
 * so "Add to Watch" and "Copy as Expression" give expressions the debugger understands.
 */
import type { DebugProtocol } from '@vscode/debugprotocol';
import { Handles } from '@vscode/debugadapter';
import { decodeUint8 } from '../../trainer/contract/protocol/tokens';
import type { MetricsRecord, TrajectoryRecord } from '../../trainer/contract/protocol/runStore';
import { display } from './breakpoints/expression';
import type { StopPoint } from './timeline';
import { callIsDone, callView } from './breakpoints/turnContext';

interface Container {
  value: unknown;
  /** The context expression that reads `value`, when there is one. */
  path?: string | undefined;
}

/** What a frame shows: which turn (and call) of which trajectory, and how far the rollout got. */
export interface FrameSubject {
  step: number;
  trajectory: TrajectoryRecord;
  turn: number;
  /** The call this frame is about, -1 for a turn or end frame. */
  call: number;
  isEnd: boolean;
  /** The trajectory's current point: decides which results are visible yet. */
  visibleAt: StopPoint;
  metrics?: MetricsRecord | undefined;
  /** The run directory, where the images a trajectory saw are (images/<sha256>.<format>). */
  runDirectory?: string | undefined;
}

export class VariableStore {
  private readonly handles = new Handles<Container>();

  /** Forget every handle: after the rollout moves, old references must not resolve. */
  reset(): void {
    this.handles.reset();
  }

  scopes(subject: FrameSubject): DebugProtocol.Scope[] {
    const scopes: DebugProtocol.Scope[] = [];
    const { trajectory, turn: turnIndex, call: callIndex, visibleAt } = subject;
    const turn = trajectory.turns[Math.min(turnIndex, trajectory.turns.length - 1)];
    const add = (name: string, value: unknown, path?: string, hint?: DebugProtocol.Scope['presentationHint']) =>
      scopes.push({
        name,
        variablesReference: this.handles.create({ value, path }),
        expensive: false,
        ...(hint ? { presentationHint: hint } : {}),
      });

    const call = callIndex >= 0 ? turn?.toolCalls?.find((c) => c.index === callIndex) : undefined;
    if (call) add('Tool call', prune(callView(call, turn.index, visibleAt)), 'call', 'arguments');
    const rewards = this.rewards(subject);
    if (subject.isEnd) add('Rewards', rewards, 'rewards');
    if (turn && !subject.isEnd) add('Turn', this.turn(subject), undefined, 'locals');
    if (turn && !call && !subject.isEnd && turn.toolCalls?.length) {
      add(
        'Tool calls',
        turn.toolCalls.map((c) => prune(callView(c, turn.index, visibleAt))),
        'calls',
      );
    }
    if (!subject.isEnd) add('Rewards', rewards, 'rewards');
    const images = this.images(subject);
    if (images.length) add(`Images (${images.length})`, images);
    add('Step', this.step(subject), undefined, 'registers');
    return scopes;
  }

  /** A value shown in the debug console or a watch: expandable when it is an object. */
  evaluated(value: unknown, expression: string): { result: string; variablesReference: number; type: string } {
    return {
      result: preview(value),
      variablesReference: isExpandable(value) ? this.handles.create({ value, path: expression }) : 0,
      type: typeOf(value),
    };
  }

  variables(reference: number): DebugProtocol.Variable[] {
    const container = this.handles.get(reference);
    if (!container) return [];
    const { value, path } = container;
    const entries: Array<[string, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [String(i), v])
      : Object.entries(value as object);
    return entries.map(([name, v]) => {
      const childPath =
        path === undefined
          ? undefined
          : Array.isArray(value)
            ? `${path}[${name}]`
            : /^[A-Za-z_$][\w$]*$/.test(name)
              ? `${path}.${name}`
              : `${path}[${JSON.stringify(name)}]`;
      return {
        name: Array.isArray(value) && isCallLike(v) ? `${name}: ${callLabel(v)}` : name,
        value: preview(v),
        type: typeOf(v),
        variablesReference: isExpandable(v) ? this.handles.create({ value: v, path: childPath }) : 0,
        ...(childPath ? { evaluateName: childPath } : {}),
        ...(typeof v === 'string' && v.length > 80
          ? { presentationHint: { kind: 'data', attributes: ['rawString'] } }
          : {}),
      } satisfies DebugProtocol.Variable;
    });
  }

  private turn({ trajectory, turn: index }: FrameSubject): Record<string, unknown> {
    const turn = trajectory.turns[index];
    const generated = countGenerated(trajectory, turn.tokenStart, turn.tokenEnd);
    return prune({
      index: turn.index,
      role: turn.role,
      text: turn.text,
      tokens: prune({ count: turn.tokenEnd - turn.tokenStart, generated, start: turn.tokenStart, end: turn.tokenEnd }),
      finish: turn.finish,
      logprob: turn.logprob ? { ...turn.logprob } : undefined,
      entropy: turn.entropy ? { ...turn.entropy } : undefined,
      toolCalls: turn.toolCalls?.length,
    });
  }

  /**
   * The images the trajectory has seen so far (vision-language runs): the prompt's, and each
   * tool's once its call is done — with the file that holds it, so it can be opened.
   */
  private images({ trajectory, visibleAt, runDirectory }: FrameSubject): Record<string, unknown>[] {
    return (trajectory.images ?? [])
      .filter((image) => image.from.kind === 'prompt' || callIsDone(image.from.turn, image.from.call, visibleAt))
      .map((image) => ({
        from: image.from.kind === 'prompt' ? 'prompt' : `tool call ${image.from.call} of turn ${image.from.turn}`,
        size: `${image.width}×${image.height} ${image.format}`,
        tokens: image.tokens,
        tokenStart: image.tokenStart,
        file: runDirectory ? `${runDirectory.replace(/(?<![\\/])[\\/]+$/, '')}/${image.file}` : image.file,
        sha256: image.sha256,
      }));
  }

  private rewards({ trajectory, visibleAt }: FrameSubject): Record<string, unknown> {
    if (trajectory.inFlight) {
      return {
        status: 'pending: rewards and the advantage are computed when the whole batch has finished its rollout',
        finishReason: trajectory.inFlight.ended ? trajectory.finishReason : 'in progress',
      };
    }
    const done = trajectory.turns.flatMap((t) =>
      (t.toolCalls ?? []).filter((c) => callIsDone(t.index, c.index, visibleAt)),
    );
    return prune({
      outcome: trajectory.rewards.outcome,
      process: trajectory.rewards.process,
      processSoFar: done.reduce((sum, c) => sum + (c.processReward ?? 0), 0),
      total: trajectory.rewards.total,
      advantage: trajectory.advantage,
      components: { ...trajectory.rewards.components },
      finishReason: trajectory.finishReason,
      answer: trajectory.answer,
    });
  }

  private step({ step, metrics }: FrameSubject): Record<string, unknown> {
    return prune({
      step,
      kind: metrics?.kind,
      time: metrics?.time,
      skipped: metrics?.skipped?.reason,
      nonFinite: metrics?.nonFinite,
      metrics: metrics ? { ...metrics.values } : undefined,
    });
  }
}

/** Generated (policy) tokens in [start, end), from the trajectory's mask. */
function countGenerated(trajectory: TrajectoryRecord, start: number, end: number): number | undefined {
  if (!trajectory.tokens.mask) return undefined;
  const mask = decodeUint8(trajectory.tokens.mask);
  let n = 0;
  for (let i = start; i < Math.min(end, mask.length); i++) n += mask[i];
  return n;
}

/** Leave out fields without a value: a pending call simply has no observation yet. */
function prune<T extends Record<string, unknown>>(record: T): T {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as T;
}

function isExpandable(value: unknown): value is object {
  return (
    typeof value === 'object' &&
    value !== null &&
    (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0)
  );
}

function isCallLike(value: unknown): value is { index: number; name?: string; state?: string } {
  return typeof value === 'object' && value !== null && 'raw' in value && 'state' in value;
}

function callLabel(call: { name?: string; state?: string }): string {
  return `${call.name ?? '<unparsed>'} (${call.state})`;
}

function typeOf(value: unknown): string {
  return Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
}

/** One line: strings quoted, objects as a short preview. */
export function preview(value: unknown, budget = 120): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `Array(${value.length})`;
  if (typeof value === 'object' && value !== null) {
    const text = `{${Object.entries(value)
      .map(
        ([k, v]) =>
          `${k}: ${typeof v === 'object' && v !== null ? (Array.isArray(v) ? `Array(${v.length})` : '{…}') : typeof v === 'string' ? JSON.stringify(v) : display(v)}`,
      )
      .join(', ')}}`;
    return text.length > budget ? `${text.slice(0, budget - 2)}…}` : text;
  }
  return display(value);
}
