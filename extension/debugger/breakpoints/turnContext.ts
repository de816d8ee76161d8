/**
 * What is known at a stop point, in two shapes: the turn context that conditions, logpoints
 * and the debug console evaluate over (`turn > 3`, `call.name === "search"`, `reward < 0`),
 * and the facts breakpoints match (which tool is about to run, which failure happened).
 *
 * A call that has not run yet shows only what the policy wrote (name, arguments, raw text) and
 * failures found before running (parse, unknown tool, invalid arguments): its observation,
 * latency and process reward appear at its result. Replay knows more, but shows what a live
 * run would know at that point, so the two modes read the same. The trajectory's final
 * rewards and advantage are the exception: in replay they are recorded facts, and filtering
 * on them (`advantage > 0.5`) is the point of replaying.
 */
import type {
  MetricsRecord,
  ToolCallRecord,
  ToolErrorKind,
  TrajectoryRecord,
} from '../../../trainer/contract/protocol/runStore';
import type { StopPoint } from '../timeline';

/** Top-level names of the turn context; expressions are checked against them when set. */
export const CONTEXT_NAMES = [
  'step',
  'index',
  'row',
  'group',
  'sample',
  'prompt',
  'phase',
  'turn',
  'role',
  'text',
  'tokens',
  'finish',
  'logprob',
  'entropy',
  'call',
  'calls',
  'tool',
  'error',
  'reward',
  'outcome',
  'process',
  'processSoFar',
  'total',
  'advantage',
  'components',
  'rewards',
  'finishReason',
  'answer',
  'turns',
  'metrics',
] as const;

export type TurnContext = Record<(typeof CONTEXT_NAMES)[number], unknown>;

/** Failures a call can show before it runs. */
const PRE_EXECUTION_ERRORS: readonly ToolErrorKind[] = ['parse', 'unknown_tool', 'invalid_arguments'];

/** Has the call (turn, call) produced its result by the time the rollout is at `point`? */
export function callIsDone(turn: number, call: number, point: StopPoint): boolean {
  if (point.phase === 'end' || point.phase === 'update') return true;
  if (turn !== point.turn) return turn < point.turn;
  return call < point.call || (call === point.call && point.phase === 'result');
}

/** A call as visible at `point`: its result fields only once it has run. */
export function callView(call: ToolCallRecord, turn: number, point: StopPoint): Record<string, unknown> {
  // A live snapshot marks calls that have not run yet: in a turn with several calls they all run together.
  const done = callIsDone(turn, call.index, point) && !call.pending;
  const visibleError = call.error && (done || PRE_EXECUTION_ERRORS.includes(call.error.kind)) ? call.error : undefined;
  return {
    index: call.index,
    turn,
    name: call.name,
    arguments: call.arguments,
    raw: call.raw,
    state: done ? (call.error ? 'failed' : 'done') : 'pending',
    error: visibleError ? { kind: visibleError.kind, message: visibleError.message } : undefined,
    ...(done
      ? {
          observation: call.observation,
          truncated: call.truncated,
          latencyMs: call.latencyMs,
          processReward: call.processReward,
        }
      : { observation: undefined, truncated: undefined, latencyMs: undefined, processReward: undefined }),
  };
}

/**
 * The turn context at `point` (for an `update` point, only step and metrics are set).
 * `visibleAt` is how far the trajectory has got, when that is later than `point` (an outer
 * stack frame): results that exist by then are shown.
 */
export function turnContext(
  step: number,
  trajectory: TrajectoryRecord | undefined,
  point: StopPoint,
  metrics: MetricsRecord | undefined,
  visibleAt: StopPoint = point,
): TurnContext {
  const context = Object.fromEntries(CONTEXT_NAMES.map((name) => [name, undefined])) as TurnContext;
  context.step = step;
  context.phase = point.phase;
  context.metrics = metrics ? { ...metrics.values } : undefined;
  if (!trajectory) return context;

  const turnIndex = Math.min(point.turn, trajectory.turns.length - 1);
  const turn = trajectory.turns[turnIndex];
  const calls = (turn?.toolCalls ?? []).map((c) => callView(c, turn.index, visibleAt));
  const call = point.call >= 0 ? calls.find((c) => c.index === point.call) : undefined;
  const done = trajectory.turns.flatMap((t) =>
    (t.toolCalls ?? []).filter((c) => callIsDone(t.index, c.index, visibleAt)),
  );
  // Live, during the rollout: rewards and the advantage do not exist yet (undefined, so `reward < 0` is false).
  const scored = !trajectory.inFlight;
  Object.assign(context, {
    index: trajectory.index,
    row: trajectory.rowId,
    group: trajectory.group,
    sample: trajectory.sample,
    prompt: trajectory.prompt,
    turn: point.phase === 'end' ? trajectory.turns.length : turnIndex,
    role: turn?.role,
    text: turn?.text,
    tokens: turn ? turn.tokenEnd - turn.tokenStart : undefined,
    finish: turn?.finish,
    logprob: turn?.logprob ? { ...turn.logprob } : undefined,
    entropy: turn?.entropy ? { ...turn.entropy } : undefined,
    call,
    calls,
    tool: call?.name,
    error: (call?.error as { kind: string } | undefined)?.kind,
    ...(scored
      ? {
          reward: trajectory.rewards.total,
          outcome: trajectory.rewards.outcome,
          process: trajectory.rewards.process,
          processSoFar: done.reduce((sum, c) => sum + (c.processReward ?? 0), 0),
          total: trajectory.rewards.total,
          advantage: trajectory.advantage,
          components: { ...trajectory.rewards.components },
          rewards: {
            ...trajectory.rewards,
            components: { ...trajectory.rewards.components },
            advantage: trajectory.advantage,
          },
          answer: trajectory.answer,
        }
      : {}),
    finishReason: !trajectory.inFlight || trajectory.inFlight.ended ? trajectory.finishReason : undefined,
    turns: trajectory.turns.length,
  });
  return context;
}

export type ExceptionFilterId = 'toolThrew' | 'toolCallParse' | 'toolCallInvalid' | 'truncated' | 'nonFiniteLoss';

export interface ExceptionFact {
  filter: ExceptionFilterId;
  /** Short id shown by the exception widget: the error kind or the finish reason. */
  id: string;
  description: string;
  details?: string | undefined;
}

export interface PointFacts {
  /** At a `call` point: the tool about to run (undefined when the call could not be parsed). */
  toolName?: string | undefined;
  exceptions: ExceptionFact[];
}

/** What a breakpoint can match at `point`. */
export function pointFacts(
  trajectory: TrajectoryRecord | undefined,
  point: StopPoint,
  metrics: MetricsRecord | undefined,
): PointFacts {
  const facts: PointFacts = { exceptions: [] };
  if (point.phase === 'update') {
    const nonFinite = metrics?.nonFinite ?? [];
    const lossLike = nonFinite.filter((name) => name.startsWith('loss') || name.startsWith('grad'));
    if (metrics?.skipped || lossLike.length) {
      facts.exceptions.push({
        filter: 'nonFiniteLoss',
        id: 'non-finite loss',
        description: `Step ${metrics!.step}: ${lossLike.length ? `${lossLike.join(', ')} not finite` : 'update skipped'}${metrics!.skipped ? ` — ${metrics!.skipped.reason}` : ''}`,
      });
    }
    return facts;
  }
  if (!trajectory) return facts;
  const turn = trajectory.turns[point.turn];
  const call = point.call >= 0 ? turn?.toolCalls?.find((c) => c.index === point.call) : undefined;
  if (point.phase === 'call' && call) {
    facts.toolName = call.name;
    if (call.error?.kind === 'parse')
      facts.exceptions.push(callFailure('toolCallParse', call, 'Tool-call parse failure'));
    if (call.error?.kind === 'unknown_tool' || call.error?.kind === 'invalid_arguments')
      facts.exceptions.push(
        callFailure('toolCallInvalid', call, call.error.kind === 'unknown_tool' ? 'Unknown tool' : 'Invalid arguments'),
      );
  }
  if (point.phase === 'result' && call) {
    if (call.error?.kind === 'threw' || call.error?.kind === 'timeout')
      facts.exceptions.push(
        callFailure('toolThrew', call, call.error.kind === 'threw' ? 'Tool threw' : 'Tool timed out'),
      );
    if (call.truncated)
      facts.exceptions.push({
        filter: 'truncated',
        id: 'result truncated',
        description: `The result of ${call.name ?? 'the call'} was truncated to the tool-result budget`,
      });
  }
  if (point.phase === 'turn' && turn?.finish === 'length') {
    facts.exceptions.push({
      filter: 'truncated',
      id: 'max_turn_tokens',
      description: `Turn ${turn.index} stopped at the per-turn token budget`,
    });
  }
  if (
    point.phase === 'end' &&
    (trajectory.finishReason === 'max_total_tokens' || trajectory.finishReason === 'max_turns')
  ) {
    facts.exceptions.push({
      filter: 'truncated',
      id: trajectory.finishReason,
      description:
        trajectory.finishReason === 'max_turns'
          ? 'The trajectory ran out of turns'
          : 'The trajectory reached the total context budget',
    });
  }
  return facts;
}

function callFailure(filter: ExceptionFilterId, call: ToolCallRecord, label: string): ExceptionFact {
  const [first, ...rest] = call.error!.message.split('\n');
  return {
    filter,
    id: call.error!.kind,
    description: `${label}${call.name ? ` (${call.name})` : ''}: ${first}`,
    details: rest.length ? call.error!.message : undefined,
  };
}
