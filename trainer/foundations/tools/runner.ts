import * as path from 'node:path';
import { inspect } from 'node:util';
import { describeIssues } from '../../contract/protocol/parse';
import { summarizeIssues } from './issueSummary';
import type { ToolErrorKind } from '../../contract/protocol/runStore';
import { RAW_ARGUMENTS, type ToolContext, type ToolLogger, type TrajectoryView } from './context';
import { CallSignals } from './callSignals';
import { ToolTimeoutError, withDeadline, type DeadlineOutcome } from './deadline';
import { normalizeToolOutput, type ToolResult } from './result';
import { Semaphore } from './semaphore';
import type { Tool, ToolInvocation } from './tool';
import type { ToolSet } from './toolSet';

/** A parsed call to run: the tool's name and the arguments as the policy wrote them (not yet validated). */
export interface ToolCallRequest {
  name: string;
  arguments: unknown;
  trajectory: TrajectoryView;
  turn: number;
  callIndex: number;
  row: object & { toolArgs?: Record<string, Record<string, unknown>> };
}

export interface ToolCallError {
  kind: ToolErrorKind;
  /** For the record: the full text (a thrown error's stack included). */
  message: string;
  /** What was wrong in a few words, for the policy's observation (`"to" is missing`). */
  summary?: string | undefined;
}

export interface ToolRunOutcome {
  /** Validated arguments when validation passed, else what the policy wrote. */
  arguments: unknown;
  result?: ToolResult;
  error?: ToolCallError;
  /** Time spent executing (waiting for a concurrency slot not included); 0 when it never ran. */
  latencyMs: number;
  /** What the tool logged, as `level: message` lines. */
  logs: string[];
}

export interface ToolLogLine {
  tool: string;
  trajectory: number;
  turn: number;
  level: 'info' | 'warn' | 'error';
  message: string;
}

export interface ToolRunnerOptions {
  /** Aborts every running call (the rollout was stopped). */
  signal?: AbortSignal | undefined;
  /** Receives every line a tool logs. */
  onLog?: ((line: ToolLogLine) => void) | undefined;
  /** Answers calls instead of their tools and sees every outcome (recorded tool results: tools/cassette.ts). */
  interceptor?: ToolCallInterceptor | undefined;
}

/** An outcome given in place of running the tool (a recording, an edited result). */
export type InterceptedOutcome = Omit<ToolRunOutcome, 'arguments'>;

/** A call that passed validation, with what came of it (run, or answered by the interceptor). */
export interface InterceptedCall {
  request: ToolCallRequest;
  tool: string;
  /** The validated arguments. */
  args: unknown;
  outcome: ToolRunOutcome;
}

/**
 * The seam where recorded tool results come in (cassettes, re-rolls with an edited result): asked
 * for each call whose arguments passed the tool's schema before the tool runs — an outcome
 * answers the call, undefined runs the tool — and told every such call's outcome after the round,
 * in request order. Calls that fail validation never reach it (their outcome does not depend on
 * the tool).
 */
export interface ToolCallInterceptor {
  answer?(request: ToolCallRequest, tool: string, args: unknown): InterceptedOutcome | undefined;
  roundFinished?(calls: readonly InterceptedCall[]): void;
}

/** The most of a description kept: a tool can throw a megabyte-long string or a huge object. */
const MAX_DESCRIPTION = 4000;

/**
 * "Error: boom\n    at …" for an Error, an inspected form for anything else thrown — a BigInt, a
 * circular object, a null-prototype object, a Proxy whose traps throw: user code can throw
 * anything, and describing it must never throw in turn (that would end the run).
 */
/** The trainer's own code: its sources (`trainer/`), or the bundle's folder (`dist/trainer/`). */
const TRAINER_ROOT = __filename.endsWith('.ts') ? path.resolve(__dirname, '..', '..') : __dirname;

/**
 * A stack as the policy and the user should read it: the message and the frames of the user's
 * code, without the trainer's own frames (the runner, the tool worker, the SDK wrappers) or
 * Node's internals, which say nothing about the tool and leak the trainer's layout into the
 * observation.
 */
export function withoutTrainerFrames(stack: string): string {
  const lines = stack.split('\n');
  const kept = lines.filter((line) => {
    if (!/^\s+at /.test(line)) return true;
    // Frames without a place (`at async Promise.all (index 0)`, `at Array.map (<anonymous>)`) are built-ins the trainer's own awaits put there.
    if (/\((index \d+|<anonymous>)\)$|^\s+at <anonymous>$/.test(line)) return false;
    return (
      !line.includes(TRAINER_ROOT + path.sep) &&
      !/\(?node:/.test(line) &&
      !line.includes('node_modules' + path.sep + 'tsx' + path.sep)
    );
  });
  return kept.join('\n');
}

export function describeThrown(error: unknown): string {
  let text: string;
  try {
    if (error instanceof Error) {
      const { stack, name, message } = error;
      text =
        typeof stack === 'string' && stack.includes(String(message))
          ? withoutTrainerFrames(stack)
          : `${String(name)}: ${String(message)}`;
    } else {
      text = `thrown value: ${typeof error === 'string' ? error : inspect(error, { depth: 2, breakLength: Infinity, maxArrayLength: 20, maxStringLength: MAX_DESCRIPTION })}`;
    }
  } catch {
    text = `thrown value: ${safeTag(error)} (it could not be described further)`;
  }
  return text.length > MAX_DESCRIPTION
    ? `${text.slice(0, MAX_DESCRIPTION)}… (${text.length - MAX_DESCRIPTION} more characters)`
    : text;
}

function safeTag(value: unknown): string {
  try {
    return Object.prototype.toString.call(value);
  } catch {
    return typeof value;
  }
}

/** `instanceof` that a thrown Proxy cannot turn into a second throw. */
export function safeInstanceOf<T>(value: unknown, type: abstract new (...args: never[]) => T): value is T {
  try {
    return value instanceof type;
  } catch {
    return false;
  }
}

function failure(error: unknown): ToolCallError {
  if (safeInstanceOf(error, ToolTimeoutError)) return { kind: 'timeout', message: error.message };
  return { kind: 'threw', message: describeThrown(error) };
}

/**
 * Runs a round of tool calls — from every trajectory of the batch at once — and turns every
 * failure into an outcome rather than an exception: unknown tool, arguments failing the schema,
 * a throw, a timeout, or output of the wrong shape. Calls run concurrently, each tool limited to
 * its own `concurrency`; tools with `executeBatch` get their calls in batches.
 */
export class ToolRunner {
  private readonly slots = new Map<Tool, Semaphore>();

  constructor(
    private readonly tools: ToolSet,
    private readonly options: ToolRunnerOptions = {},
  ) {
    for (const tool of tools.tools) this.slots.set(tool, new Semaphore(tool.concurrency));
  }

  async run(requests: readonly ToolCallRequest[]): Promise<ToolRunOutcome[]> {
    const outcomes = new Array<ToolRunOutcome>(requests.length);
    const batched = new Map<
      Tool,
      { position: number; invocation: ToolInvocation<unknown, object>; logs: string[] }[]
    >();
    const single: Promise<void>[] = [];
    const signals = new CallSignals(this.options.signal);

    const checked = await Promise.all(requests.map((request) => this.check(request)));
    const interceptor = this.options.interceptor;
    checked.forEach((check, position) => {
      if ('error' in check) {
        outcomes[position] = { arguments: requests[position].arguments, error: check.error, latencyMs: 0, logs: [] };
        return;
      }
      const { tool, args } = check;
      const answered = interceptor?.answer?.(requests[position], tool.name, args);
      if (answered) {
        outcomes[position] = { arguments: args, ...answered };
        return;
      }
      const logs: string[] = [];
      const ctx = this.context(tool, requests[position], logs);
      if (tool.executeBatch) {
        const list = batched.get(tool) ?? [];
        list.push({ position, invocation: { args, ctx }, logs });
        batched.set(tool, list);
      } else {
        single.push(
          this.runOne(tool, args, ctx, signals).then((outcome) => {
            outcomes[position] = { arguments: args, ...outcome, logs };
          }),
        );
      }
    });

    const batches: Promise<void>[] = [];
    for (const [tool, calls] of batched) {
      for (let start = 0; start < calls.length; start += tool.maxBatchSize) {
        const chunk = calls.slice(start, start + tool.maxBatchSize);
        batches.push(
          this.runBatch(
            tool,
            chunk.map((c) => c.invocation),
            signals,
          ).then((results) => {
            chunk.forEach((c, k) => {
              outcomes[c.position] = { arguments: c.invocation.args, ...results[k], logs: c.logs };
            });
          }),
        );
      }
    }
    try {
      await Promise.all([...single, ...batches]);
    } finally {
      signals.close();
    }
    if (interceptor?.roundFinished) {
      const calls: InterceptedCall[] = [];
      checked.forEach((check, position) => {
        if (!('error' in check))
          calls.push({
            request: requests[position],
            tool: check.tool.name,
            args: check.args,
            outcome: outcomes[position],
          });
      });
      interceptor.roundFinished(calls);
    }
    return outcomes;
  }

  /** The tool by name, and the arguments validated by its schema (async refinements allowed). */
  private async check(request: ToolCallRequest): Promise<{ tool: Tool; args: unknown } | { error: ToolCallError }> {
    const tool = this.tools.get(request.name);
    if (!tool) {
      const names = this.tools.names;
      const list = names.length ? names.join(', ') : '(none)';
      return {
        error: {
          kind: 'unknown_tool',
          message: `there is no tool named "${request.name}"; the tools are: ${list}`,
          summary: `no tool ${JSON.stringify(request.name)}; tools: ${list}`,
        },
      };
    }
    let parsed;
    try {
      parsed = await tool.parameters.safeParseAsync(request.arguments);
    } catch (error) {
      // A refinement in the user's schema threw: a bug in the tool, not in the call.
      return {
        error: { kind: 'threw', message: `validating the arguments of ${tool.name} threw: ${describeThrown(error)}` },
      };
    }
    if (!parsed.success) {
      return {
        error: {
          kind: 'invalid_arguments',
          message: `arguments of ${tool.name} do not match its schema: ${describeIssues(parsed.error.issues)}`,
          summary: summarizeIssues(parsed.error.issues, request.arguments),
        },
      };
    }
    return { tool, args: parsed.data };
  }

  private context(tool: Tool, request: ToolCallRequest, logs: string[]): ToolContext<object> {
    const emit = (level: ToolLogLine['level']) => (message: string) => {
      const text = String(message);
      logs.push(`${level}: ${text}`);
      this.options.onLog?.({
        tool: tool.name,
        trajectory: request.trajectory.index,
        turn: request.turn,
        level,
        message: text,
      });
    };
    const log: ToolLogger = { info: emit('info'), warn: emit('warn'), error: emit('error') };
    // The signal is replaced per execution (see runOne / runBatch); this one is never aborted.
    const ctx: ToolContext<object> & { [RAW_ARGUMENTS]?: unknown } = {
      trajectory: request.trajectory,
      turn: request.turn,
      callIndex: request.callIndex,
      row: request.row,
      rowArgs: request.row.toolArgs?.[tool.name],
      signal: new AbortController().signal,
      log,
      [RAW_ARGUMENTS]: request.arguments,
    };
    return ctx;
  }

  private async runOne(
    tool: Tool,
    args: unknown,
    ctx: ToolContext<object>,
    signals: CallSignals,
  ): Promise<Omit<ToolRunOutcome, 'arguments' | 'logs'>> {
    const release = await this.slots.get(tool)!.acquire();
    const started = performance.now();
    const controller = signals.open();
    let outcome: DeadlineOutcome<ToolResult>;
    try {
      outcome = await withDeadline(tool.name, tool.timeoutMs, controller, async (signal) =>
        normalizeToolOutput(tool.name, await tool.execute(args as never, { ...ctx, signal } as never)),
      );
    } finally {
      signals.release(controller);
      release();
    }
    const latencyMs = performance.now() - started;
    return outcome.ok ? { result: outcome.value, latencyMs } : { error: failure(outcome.error), latencyMs };
  }

  private async runBatch(
    tool: Tool,
    invocations: ToolInvocation<unknown, object>[],
    signals: CallSignals,
  ): Promise<Omit<ToolRunOutcome, 'arguments' | 'logs'>[]> {
    const release = await this.slots.get(tool)!.acquire();
    const started = performance.now();
    const controller = signals.open();
    let outcome: DeadlineOutcome<readonly unknown[]>;
    try {
      outcome = await withDeadline(tool.name, tool.timeoutMs, controller, async (signal) => {
        const outputs = await tool.executeBatch!(
          invocations.map((c) => ({ args: c.args as never, ctx: { ...c.ctx, signal } as never })),
        );
        if (!Array.isArray(outputs) || outputs.length !== invocations.length) {
          throw new TypeError(
            `tool "${tool.name}": executeBatch returned ${Array.isArray(outputs) ? `${outputs.length} outputs` : typeof outputs} for ${invocations.length} calls; return one output (or Error) per call, in order`,
          );
        }
        return outputs;
      });
    } finally {
      signals.release(controller);
      release();
    }
    const latencyMs = performance.now() - started;
    if (!outcome.ok) return invocations.map(() => ({ error: failure(outcome.error), latencyMs }));
    return outcome.value.map((output) => {
      if (safeInstanceOf(output, Error)) return { error: failure(output), latencyMs };
      try {
        return { result: normalizeToolOutput(tool.name, output), latencyMs };
      } catch (error) {
        return { error: failure(error), latencyMs };
      }
    });
  }
}
