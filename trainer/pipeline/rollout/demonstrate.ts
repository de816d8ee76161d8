import type { z } from 'zod';
import { datasetFromRows } from '../../foundations/data/dataset';
import { describeRow, type DatasetRow } from '../../foundations/data/row';
import type { ChatMessage } from '../../contract/protocol/chatMessages';
import { Demonstration } from '../../contract/protocol/demonstration';
import { definedFields } from '../../contract/definedFields';
import { parseWith } from '../../contract/protocol/parse';
import type { CallView, TrajectoryView } from '../../foundations/tools/context';
import type { ToolResult } from '../../foundations/tools/result';
import { ToolRunner, type ToolCallError, type ToolRunOutcome } from '../../foundations/tools/runner';
import type { ParametersSchema } from '../../foundations/tools/schema';
import type { Tool } from '../../foundations/tools/tool';
import { ToolSet } from '../../foundations/tools/toolSet';
import { defaultErrorObservation, type ErrorObservation } from './errorObservation';
import { renderObservation } from './observation';

/**
 * Demonstrations from a scripted solver, through the real tools: the solver decides what to call
 * and what to answer; every call runs through the same ToolRunner as a rollout (argument
 * validation, the row's `toolArgs`, timeouts) and is shown as the agent loop shows it (the
 * result's text, or the error observation). So a demonstration's tool messages are exactly what
 * the tools return, and stay so when a tool changes — nothing is copied by hand.
 *
 *   const demos = await demonstrate(rows, { tools: [calculator] }, async (row, script) => {
 *     const { observation } = await script.call(calculator, { expression: row.expression });
 *     return `<answer>${observation}</answer>`;
 *   });
 *   writeJsonl('data/sft.jsonl', demos);
 *
 * Results longer than the config's `budget.maxToolResultTokens` are truncated in a rollout but
 * not here: keep demonstrated results within it.
 */

export interface ScriptedCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface DemonstratedCall {
  /** What the policy is shown: the result's text, or the error observation of a call that failed. */
  observation: string;
  /** The tool's result (its `data` too) when the call succeeded. */
  result?: ToolResult;
  /** Why it failed: the tool threw or timed out. */
  error?: ToolCallError;
}

export interface DemonstrationScript {
  /**
   * One assistant turn that makes this call (with `content` before it, e.g. a thought); resolves
   * to what the tool returned. Given the tool itself rather than its name, the arguments are
   * type-checked against its schema.
   */
  call<Params extends ParametersSchema>(
    tool: Tool<Params, never>,
    args: z.input<Params>,
    options?: { content?: string },
  ): Promise<DemonstratedCall>;
  call(name: string, args: Record<string, unknown>, options?: { content?: string }): Promise<DemonstratedCall>;
  /** One assistant turn that makes several calls, run together as a rollout runs a turn's calls. */
  callAll(calls: readonly ScriptedCall[], options?: { content?: string }): Promise<DemonstratedCall[]>;
}

/** A row as the solver sees it: its own fields, its `id`, and its conversation as `messages`. */
export type DemonstrationRow<Row extends object> = DatasetRow<
  Omit<Row, 'id' | 'prompt' | 'system' | 'messages' | 'toolArgs'>
>;

/** Returns the final answer's text (the last assistant message). */
export type ScriptedSolver<Row extends object> = (
  row: DemonstrationRow<Row>,
  script: DemonstrationScript,
) => string | Promise<string>;

export interface DemonstrateOptions {
  tools: readonly Tool[] | ToolSet;
  /** For rows without a system message: the training config's `rollout.systemPrompt`, so demonstrations start as rollouts do. */
  systemPrompt?: string;
  /** As the training config's agent loop shows failed calls (default: the loop's default). */
  errorObservation?: ErrorObservation;
  /** Names the rows in errors (default "demonstrate()"). */
  origin?: string;
}

/** The solver asked for something a demonstration cannot show: a tool that does not exist, or arguments its schema rejects. */
export class DemonstrationScriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DemonstrationScriptError';
  }
}

/**
 * One demonstration per row, in row order: `{ id, messages }` (the format of
 * protocol/demonstration.ts), ready for `writeJsonl`. Rows are dataset rows (`prompt` with an
 * optional `system`, or `messages`; `id`, `toolArgs` and the row's own fields), solved one after another.
 */
export async function demonstrate<Row extends object>(
  rows: readonly Row[],
  options: DemonstrateOptions,
  solve: ScriptedSolver<Row>,
): Promise<Demonstration[]> {
  const tools = options.tools instanceof ToolSet ? options.tools : new ToolSet(options.tools);
  const tooling: ScriptTooling = {
    tools,
    runner: new ToolRunner(tools),
    errorObservation: options.errorObservation ?? defaultErrorObservation,
  };
  const dataset = datasetFromRows(options.origin ?? 'demonstrate()', rows);
  const demonstrations: Demonstration[] = [];
  for (const [index, row] of dataset.rows.entries()) {
    const messages: ChatMessage[] =
      options.systemPrompt !== undefined && row.messages[0]?.role !== 'system'
        ? [{ role: 'system', content: options.systemPrompt }, ...row.messages]
        : [...row.messages];
    const calls: CallView[] = [];
    const state: ScriptedRow = {
      row,
      view: { index, rowId: row.id, group: index, sample: 0, messages, calls },
      messages,
      calls,
      turn: 0,
    };
    const callAll = (wanted: readonly ScriptedCall[], turnOptions: { content?: string } = {}) =>
      scriptedTurn(state, tooling, wanted, turnOptions);
    const script: DemonstrationScript = {
      call: async (tool: string | Tool, args: Record<string, unknown>, turnOptions?: { content?: string }) =>
        (await callAll([{ name: typeof tool === 'string' ? tool : tool.name, arguments: args }], turnOptions))[0],
      callAll,
    };
    const answer = await solve(row as unknown as DemonstrationRow<Row>, script);
    if (typeof answer !== 'string')
      throw new DemonstrationScriptError(
        `${describeRow(row)}: the solver returned ${answer === undefined ? 'nothing' : typeof answer}; return the final answer's text`,
      );
    messages.push({ role: 'assistant', content: answer });
    demonstrations.push(parseWith(Demonstration, { id: row.id, messages }, `the demonstration of ${describeRow(row)}`));
  }
  return demonstrations;
}

/** What runs and shows a demonstration's calls, as in a rollout. */
interface ScriptTooling {
  tools: ToolSet;
  runner: ToolRunner;
  errorObservation: ErrorObservation;
}

/** One row while the solver scripts it: its conversation and calls so far (`view` shows both to the tools), and the turn. */
interface ScriptedRow {
  row: DatasetRow;
  view: TrajectoryView;
  messages: ChatMessage[];
  calls: CallView[];
  turn: number;
}

/** One assistant turn with `wanted`'s calls: run through the tools, then added to the conversation. */
async function scriptedTurn(
  state: ScriptedRow,
  { tools, runner, errorObservation }: ScriptTooling,
  wanted: readonly ScriptedCall[],
  turnOptions: { content?: string },
): Promise<DemonstratedCall[]> {
  const { row, view } = state;
  for (const call of wanted) {
    if (!tools.get(call.name))
      throw new DemonstrationScriptError(
        `${describeRow(row)}: the solver called "${call.name}", which is not one of the tools (${tools.names.join(', ') || 'none'})`,
      );
  }
  const outcomes = await runner.run(
    wanted.map((call, callIndex) => ({
      name: call.name,
      arguments: call.arguments,
      trajectory: view,
      turn: state.turn,
      callIndex,
      row,
    })),
  );
  outcomes.forEach((outcome, k) => {
    if (outcome.error?.kind === 'invalid_arguments')
      throw new DemonstrationScriptError(
        `${describeRow(row)}: the solver's call ${k} of turn ${state.turn}: ${outcome.error.message}`,
      );
  });
  const shown = recordTurn(state, wanted, outcomes, turnOptions.content ?? '', errorObservation);
  state.turn++;
  return shown;
}

/** The assistant message with the calls, a tool message per call, and each call as the tools and the solver see it. */
function recordTurn(
  { messages, calls, turn }: ScriptedRow,
  wanted: readonly ScriptedCall[],
  outcomes: readonly ToolRunOutcome[],
  content: string,
  errorObservation: ErrorObservation,
): DemonstratedCall[] {
  messages.push({
    role: 'assistant',
    content,
    tool_calls: wanted.map((call) => ({
      type: 'function' as const,
      function: { name: call.name, arguments: call.arguments },
    })),
  });
  return outcomes.map((outcome, k) => {
    const observation = renderObservation(outcome, wanted[k].name, errorObservation);
    messages.push({ role: 'tool', name: wanted[k].name, content: observation });
    calls.push({
      turn,
      index: k,
      name: wanted[k].name,
      arguments: outcome.arguments,
      raw: JSON.stringify({ name: wanted[k].name, arguments: wanted[k].arguments }),
      observation,
      truncated: false,
      ...definedFields({ error: outcome.error, result: outcome.result }),
      latencyMs: outcome.latencyMs,
    });
    return definedFields({ observation, result: outcome.result, error: outcome.error });
  });
}
