import type { z } from 'zod';
import type { ToolSpec } from '../../contract/protocol/chatMessages';
import type { DatasetRow } from '../data/row';
import type { RewardContext, ToolCallOutcome, ToolContext } from './context';
import type { ToolOutput } from './result';
import { parametersJsonSchema, type JsonSchema, type ParametersSchema } from './schema';

/** One call of a batched tool: its validated arguments and its context. */
export interface ToolInvocation<Args, Row extends object = DatasetRow> {
  args: Args;
  ctx: ToolContext<Row>;
}

/**
 * A tool the policy can call. A subclass gives a name, a description and a zod object schema
 * for the arguments, and implements `execute`:
 *
 * ```ts
 * const Args = z.object({ query: z.string().describe('What to look for') });
 * export class Search extends Tool<typeof Args> {
 *   name = 'search';
 *   description = 'Search the knowledge base.';
 *   parameters = Args;
 *   async execute({ query }: z.output<typeof Args>, ctx: ToolContext) { … return 'text'; }
 * }
 * ```
 *
 * `execute` receives arguments already validated against `parameters` (a call whose arguments
 * fail the schema never reaches it: the policy sees the validation error instead). It returns
 * the observation: text, or `{ content, data }` (see result.ts). Throwing, or running past
 * `timeoutMs`, is not fatal: the policy sees an error observation and the batch goes on.
 *
 * (`defineTool` builds the same thing from an object literal, with the argument types inferred.)
 */
export abstract class Tool<Params extends ParametersSchema = ParametersSchema, Row extends object = DatasetRow> {
  /** How the policy calls it: letters, digits, `_` and `-`, at most 64 characters. */
  abstract readonly name: string;
  /** What it does and when to use it; the model reads this in the prompt. */
  abstract readonly description: string;
  /** The arguments, as a zod object schema; the model sees it as JSON Schema. */
  abstract readonly parameters: Params;

  /** A call (or a batch) still running after this many milliseconds fails with `timeout` and its signal is aborted. */
  timeoutMs = 30_000;
  /** At most this many executions (or batches) of this tool run at once; the rest wait. */
  concurrency = 16;
  /** With `executeBatch`: at most this many calls per batch. */
  maxBatchSize = 64;
  /**
   * Where the trainer runs the tool when it loaded it from your files (a training config's
   * `tools`): `'worker'` (the default), in a worker thread of its own that evaluates the same
   * module, where a call that never yields — a busy loop, a runaway regular expression — is
   * stopped at `timeoutMs` and the run goes on; `'trainer'`, on the trainer's own thread, for a
   * tool that shares live objects with code outside it (a reward that reads what the tool put in
   * a module-level variable, say). Arguments and results cross the thread boundary as structured
   * clones: keep a result's `data` to plain values (objects, arrays, strings, numbers, Map, Set, Date).
   */
  isolation: 'worker' | 'trainer' = 'worker';

  abstract execute(args: z.output<Params>, ctx: ToolContext<Row>): ToolOutput | Promise<ToolOutput>;

  /**
   * Optional: serve many calls at once (one retrieval query for the whole batch, one request to
   * a remote service). When a tool defines it, the loop sends all of a round's valid calls to
   * this tool here, in chunks of `maxBatchSize`, instead of calling `execute` one by one. Return
   * one output per call, in order; an `Error` in the list fails only that call.
   */
  executeBatch?(calls: readonly ToolInvocation<z.output<Params>, Row>[]): Promise<readonly (ToolOutput | Error)[]>;

  /**
   * Optional process reward for one successful call of this tool, e.g. "the search returned a
   * document the question needs". Called after the trajectory is finished, with the whole
   * trajectory in `ctx`. Failed calls are not passed here (the error penalty covers them).
   */
  reward?(call: ToolCallOutcome<z.output<Params>>, ctx: RewardContext<Row>): number | Promise<number>;

  private cachedSchema: JsonSchema | undefined;

  /** The arguments as the JSON Schema the chat template shows (see schema.ts for what is cleaned). */
  jsonSchema(): JsonSchema {
    this.cachedSchema ??= parametersJsonSchema(this.name, this.parameters);
    return this.cachedSchema;
  }

  /** The tool as chat templates expect it: `{ type: 'function', function: { name, description, parameters } }`. */
  spec(): ToolSpec {
    return {
      type: 'function',
      function: { name: this.name, description: this.description, parameters: this.jsonSchema() },
    };
  }
}

export interface ToolDefinition<Params extends ParametersSchema, Row extends object = DatasetRow> {
  name: string;
  description: string;
  parameters: Params;
  execute(args: z.output<Params>, ctx: ToolContext<Row>): ToolOutput | Promise<ToolOutput>;
  executeBatch?(calls: readonly ToolInvocation<z.output<Params>, Row>[]): Promise<readonly (ToolOutput | Error)[]>;
  reward?(call: ToolCallOutcome<z.output<Params>>, ctx: RewardContext<Row>): number | Promise<number>;
  timeoutMs?: number;
  concurrency?: number;
  maxBatchSize?: number;
  isolation?: 'worker' | 'trainer';
}

/** A `Tool` from an object literal; `execute`'s and `reward`'s argument types come from `parameters`. */
export function defineTool<Params extends ParametersSchema, Row extends object = DatasetRow>(
  definition: ToolDefinition<Params, Row>,
): Tool<Params, Row> {
  class DefinedTool extends Tool<Params, Row> {
    readonly name = definition.name;
    readonly description = definition.description;
    readonly parameters = definition.parameters;
    override timeoutMs = definition.timeoutMs ?? 30_000;
    override concurrency = definition.concurrency ?? 16;
    override maxBatchSize = definition.maxBatchSize ?? 64;
    override isolation = definition.isolation ?? 'worker';
    execute(args: z.output<Params>, ctx: ToolContext<Row>): ToolOutput | Promise<ToolOutput> {
      return definition.execute(args, ctx);
    }
  }
  const tool = new DefinedTool();
  if (definition.executeBatch) tool.executeBatch = definition.executeBatch.bind(definition);
  if (definition.reward) tool.reward = definition.reward.bind(definition);
  return tool;
}
