import type { ChatMessage } from '../../contract/protocol/chatMessages';
import type { ToolErrorKind } from '../../contract/protocol/runStore';
import type { DatasetRow } from '../data/row';
import type { ToolResult } from './result';

/** Lines a tool logs while it runs; they are kept on the call's record and forwarded to the trainer's log. */
export interface ToolLogger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A tool call as recorded: what the policy asked for and what came of it. */
export interface CallView {
  /** The assistant turn it was made in (0 = the first generated turn). */
  turn: number;
  /** Position among that turn's calls. */
  index: number;
  /** Undefined when the call could not be parsed far enough to know the name. */
  name?: string | undefined;
  /** The validated arguments, or what was parsed when validation failed. */
  arguments?: unknown | undefined;
  /** The call as the policy wrote it. */
  raw: string;
  /** What the policy was shown (after truncation). */
  observation: string;
  truncated: boolean;
  error?: { kind: ToolErrorKind; message: string } | undefined;
  /** The tool's result (with its `data`) when the call succeeded. */
  result?: ToolResult | undefined;
  latencyMs: number;
}

/** What a tool or a reward can see of the trajectory a call belongs to. */
export interface TrajectoryView {
  /** Position in the batch. */
  index: number;
  rowId: string;
  group: number;
  sample: number;
  /** The conversation so far as chat messages (the template's view of it). */
  messages: readonly ChatMessage[];
  /** Every call made so far (for a reward: every call of the finished trajectory), in order. */
  calls: readonly CallView[];
}

/**
 * The arguments as the policy wrote them (before the schema parsed them), on a call's context
 * under a symbol of its own: a tool run in a worker parses them there with its own copy of the
 * schema, so that a schema which transforms (into a URL, a class instance) gives what it gives
 * on the trainer's thread. Not part of the tool API.
 */
export const RAW_ARGUMENTS: unique symbol = Symbol.for('rollout-studio.rawArguments');

export interface ToolContext<Row extends object = DatasetRow> {
  trajectory: TrajectoryView;
  /** The assistant turn the call was made in (0 = the first generated turn). */
  turn: number;
  /** Position among the turn's calls. */
  callIndex: number;
  /** The dataset row the trajectory started from. */
  row: Row;
  /** This tool's per-row arguments (`toolArgs.<tool name>` of the row), if the row has any. */
  rowArgs: Readonly<Record<string, unknown>> | undefined;
  /** Aborted when the call times out or the rollout is stopped; pass it to fetch, child processes, … */
  signal: AbortSignal;
  log: ToolLogger;
}

/** A successful call, as a tool's `reward` hook sees it: arguments typed from the tool's schema. */
export interface ToolCallOutcome<Args = Record<string, unknown>> extends CallView {
  name: string;
  arguments: Args;
  result: ToolResult;
  error?: undefined;
}

/** What a reward (a tool's hook or a user function) sees besides the call. */
export interface RewardContext<Row extends object = DatasetRow> {
  row: Row;
  /** The finished trajectory. */
  trajectory: TrajectoryView;
}
