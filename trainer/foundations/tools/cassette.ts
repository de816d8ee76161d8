import type { CassetteContent, CassetteEntry } from '../../contract/protocol/cassetteFile';
import type { TrajectorySet } from '../../contract/protocol/runStore';
import type { ToolContent, ToolResult } from './result';
import type { InterceptedCall, InterceptedOutcome, ToolCallInterceptor, ToolCallRequest } from './runner';

/**
 * Recorded tool results ("cassettes", as in VCR): a run records every call's arguments and what
 * came of it; a later run or a re-roll replays them instead of calling the tools, so a run whose
 * tools are external, slow or not deterministic (a web search, an MCP server) re-executes exactly,
 * offline. Plugged in at the tool runner's seam (ToolCallInterceptor), so the agent loop does not
 * know whether a result was live or recorded.
 *
 * Matching: a call's origin (set, step, the sequence's position in its rollout) and its tool and
 * canonical arguments; the k-th identical call of a sequence gets that origin's k-th recording.
 * A call with no recording at its origin gets the first recording of the same tool and arguments
 * anywhere in the cassette (a re-roll that asks what another trajectory asked). Otherwise
 * `onMiss` decides: `error` answers with an `unrecorded` error observation, `live` runs the tool.
 *
 * Replayed: the result (text, images, `data` as JSON), the error, the logs and the recorded
 * latency — the trajectory's record is the original's.
 */

/** JSON with object keys sorted at every level: the same arguments give the same text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value === undefined ? null : JSON.parse(JSON.stringify(value) ?? 'null')));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** Where a call was made: the set and step of the rollout, and the sequence's position in it. */
export interface CallOrigin {
  set: TrajectorySet;
  step: number;
  trajectory: number;
}

function originKey(o: CallOrigin): string {
  return `${o.set}/${o.step}/${o.trajectory}`;
}

function callKey(tool: string, args: unknown): string {
  return `${tool}(${canonicalJson(args)})`;
}

export type CassetteMiss = 'error' | 'live';

/** Looks recordings up (see the module comment for the matching rules). */
export class CassettePlayer {
  private readonly byOrigin = new Map<string, CassetteEntry[]>();
  private readonly anywhere = new Map<string, CassetteEntry>();
  private readonly used = new Map<string, number>();

  constructor(
    entries: readonly CassetteEntry[],
    /** Where the entries came from, for error messages. */
    readonly source: string,
  ) {
    for (const entry of entries) {
      const key = callKey(entry.tool, entry.arguments);
      const at = `${originKey(entry)}|${key}`;
      const list = this.byOrigin.get(at) ?? [];
      list.push(entry);
      this.byOrigin.set(at, list);
      if (!this.anywhere.has(key)) this.anywhere.set(key, entry);
    }
  }

  /** The recording for the `requester`'s next call of `tool` with `args` made at `origin`, if any. */
  find(requester: number, origin: CallOrigin, tool: string, args: unknown): CassetteEntry | undefined {
    const key = callKey(tool, args);
    const at = `${originKey(origin)}|${key}`;
    const counter = `${requester}|${at}`;
    const k = this.used.get(counter) ?? 0;
    this.used.set(counter, k + 1);
    return this.byOrigin.get(at)?.[k] ?? this.anywhere.get(key);
  }
}

export interface ToolCassetteOptions {
  /** Recordings to answer calls from. */
  player?: CassettePlayer;
  /** A call without a recording: an `unrecorded` error observation (default) or a live call. */
  onMiss?: CassetteMiss;
  /** Receives each tool round's entries (live and replayed alike), in call order. */
  record?: (entries: CassetteEntry[]) => void;
  /** Where a request was made (default: the current scope and the request's trajectory index). */
  originOf?: (request: ToolCallRequest) => CallOrigin;
}

/** Records and/or replays a rollout's tool calls (a ToolCallInterceptor for the ToolRunner). */
export class ToolCassette implements ToolCallInterceptor {
  /** The rollout the calls belong to: the training run moves it to each step and evaluation. */
  scope: { set: TrajectorySet; step: number } = { set: 'train', step: 0 };
  /** Calls answered from the recordings and calls that found none, since the cassette was made. */
  readonly counts = { replayed: 0, missed: 0 };

  constructor(private readonly options: ToolCassetteOptions) {}

  /** Where the recordings it replays came from, when it replays. */
  get replaying(): string | undefined {
    return this.options.player?.source;
  }

  /** Later rollouts' calls are recorded into `record` (a training run's writer exists only once the run store is open). */
  recordInto(record: (entries: CassetteEntry[]) => void): void {
    this.options.record = record;
  }

  enter(set: TrajectorySet, step: number): void {
    this.scope = { set, step };
  }

  private origin(request: ToolCallRequest): CallOrigin {
    return this.options.originOf?.(request) ?? { ...this.scope, trajectory: request.trajectory.index };
  }

  answer(request: ToolCallRequest, tool: string, args: unknown): InterceptedOutcome | undefined {
    const player = this.options.player;
    if (!player) return undefined;
    const entry = player.find(request.trajectory.index, this.origin(request), tool, args);
    if (entry) {
      this.counts.replayed++;
      return recordedOutcome(entry);
    }
    this.counts.missed++;
    if (this.options.onMiss === 'live') return undefined;
    const message = `${tool} was called with ${canonicalJson(args)}, which ${player.source} has no recording of (toolCassette.onMiss: 'live' calls the tool instead)`;
    return {
      error: { kind: 'unrecorded', message, summary: `no recorded result for these ${tool} arguments` },
      latencyMs: 0,
      logs: [],
    };
  }

  roundFinished(calls: readonly InterceptedCall[]): void {
    const record = this.options.record;
    if (!record || calls.length === 0) return;
    record(calls.map((call) => cassetteEntry(this.origin(call.request), call)));
  }
}

/** The entry of a call that ran (or was answered). */
export function cassetteEntry(origin: CallOrigin, call: InterceptedCall): CassetteEntry {
  const { outcome } = call;
  return {
    ...origin,
    turn: call.request.turn,
    call: call.request.callIndex,
    tool: call.tool,
    arguments: JSON.parse(canonicalJson(call.args)),
    ...(outcome.result ? { result: recordedResult(outcome.result) } : {}),
    ...(outcome.error
      ? {
          error: {
            kind: outcome.error.kind,
            message: outcome.error.message,
            ...(outcome.error.summary !== undefined ? { summary: outcome.error.summary } : {}),
          },
        }
      : {}),
    latencyMs: outcome.latencyMs,
    logs: [...outcome.logs],
  };
}

function recordedResult(result: ToolResult): NonNullable<CassetteEntry['result']> {
  const content = result.content.map((part): CassetteContent => {
    if (part.type === 'text') return { type: 'text', text: part.text };
    const data = typeof part.data === 'string' ? part.data : Buffer.from(part.data).toString('base64');
    return { type: 'image', data, ...(part.mimeType !== undefined ? { mimeType: part.mimeType } : {}) };
  });
  // `data` as JSON: what a recording can keep (a Map or a class instance comes back as plain JSON).
  return result.data === undefined ? { content } : { content, data: JSON.parse(JSON.stringify(result.data) ?? 'null') };
}

/** A recording as the outcome of the call it answers. */
export function recordedOutcome(entry: CassetteEntry): InterceptedOutcome {
  const result = entry.result
    ? {
        content: entry.result.content.map((part): ToolContent => ({ ...part })),
        ...(entry.result.data !== undefined ? { data: entry.result.data } : {}),
      }
    : undefined;
  return {
    ...(result ? { result } : {}),
    ...(entry.error ? { error: { ...entry.error } } : {}),
    latencyMs: entry.latencyMs,
    logs: [...entry.logs],
  };
}
