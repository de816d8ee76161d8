import type { DatasetRow } from '../../../foundations/data/row';
import { definedFields } from '../../../contract/definedFields';

/**
 * The seam between a training run and an agent we did not write: the run gives each rollout a
 * session — an OpenAI-compatible base URL and API key served by the policy under training — and
 * the runner runs the user's agent on the dataset row against it. What the agent does between
 * its requests (its own tools, its own loop) is its business; what it asks the model is what the
 * trajectory holds.
 *
 * Runners (trainer/bridges/usercode/agentHost.ts): a module exporting a function, run in a host
 * process of its own; a command, one process per session with the row on stdin and
 * `OPENAI_BASE_URL` / `OPENAI_API_KEY` in its environment; a function in the config itself, run
 * on the trainer's thread.
 */

export interface AgentContext {
  /** The session's base URL: `http://127.0.0.1:PORT/sessions/<id>/v1`. */
  baseURL: string;
  /** The session's API key (the endpoint refuses any other). */
  apiKey: string;
  /** The model id the endpoint answers to (any other id is answered by the policy too). */
  model: string;
  /** Aborted when the session must end (its time is up, the run stops). */
  signal: AbortSignal;
}

/** What an agent may return besides its conversation: its answer and a reward of its own. */
export interface AgentOutcome {
  answer?: string;
  reward?: number;
}

/** A user's agent as a function: the row, and how to reach the model. */
export type AgentFunction<Row extends object = DatasetRow> = (
  row: Row,
  context: AgentContext,
) => unknown | Promise<unknown>;

export interface AgentRunner {
  /** Runs the agent on `row` for one session; resolves with what it returned, rejects with why it failed (an AgentError). */
  run(row: DatasetRow, context: AgentContext & { session: string }): Promise<AgentOutcome | undefined>;
  /** Ends what the runner keeps between sessions (a host process). */
  close?(): Promise<void>;
}

/** An agent's session failed: it threw, exited non-zero, ran out of time, or could not start. */
export class AgentError extends Error {
  constructor(
    message: string,
    readonly kind: 'threw' | 'exit' | 'timeout' | 'start' | 'result' = 'threw',
  ) {
    super(message);
    this.name = 'AgentError';
  }
}

/** What an agent returned, read: a string is its answer; an object may carry `answer` and a finite `reward`. */
export function readAgentOutcome(value: unknown): AgentOutcome | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return { answer: value };
  if (typeof value !== 'object')
    throw new AgentError(
      `the agent returned a ${typeof value}; return nothing, a string (its answer) or { answer?, reward? }`,
      'result',
    );
  const { answer, reward } = value as { answer?: unknown; reward?: unknown };
  if (answer !== undefined && typeof answer !== 'string')
    throw new AgentError(`the agent returned answer: ${JSON.stringify(answer)}; expected a string`, 'result');
  if (reward !== undefined && (typeof reward !== 'number' || !Number.isFinite(reward)))
    throw new AgentError(`the agent returned reward: ${JSON.stringify(reward)}; expected a finite number`, 'result');
  return definedFields({ answer, reward });
}

/** A function agent on the trainer's thread (configs made in code, tests). */
export function functionAgent(agent: AgentFunction): AgentRunner {
  return {
    async run(row, context) {
      try {
        return readAgentOutcome(
          await agent(row, {
            baseURL: context.baseURL,
            apiKey: context.apiKey,
            model: context.model,
            signal: context.signal,
          }),
        );
      } catch (error) {
        if (error instanceof AgentError) throw error;
        throw new AgentError(
          `the agent threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      }
    },
  };
}
