import type { ToolSelector } from '../../contract/protocol/authoring';
/**
 * What the trainer (toolHost.ts) and a tool worker (toolWorker.ts) say to each other. Both ends
 * are this build's own code, in one process; values cross as structured clones.
 */

/** What a tool's context becomes in the worker: everything but the signal and the logger, which the worker makes anew. */
export interface WorkerToolContext {
  trajectory: unknown;
  turn: number;
  callIndex: number;
  row: unknown;
  rowArgs: unknown;
}

export interface WorkerInvocation {
  /** The arguments as the policy wrote them; the worker parses them with its own copy of the schema. */
  rawArgs: unknown;
  ctx: WorkerToolContext;
}

export type HostMessage =
  | { type: 'call'; id: number; tool: string; invocation: WorkerInvocation }
  | { type: 'batch'; id: number; tool: string; invocations: WorkerInvocation[] }
  | { type: 'abort'; id: number; reason: string }
  | { type: 'ping'; id: number };

/** A thrown value, as the trainer will describe it: an Error keeps its name, message and stack. */
export type ThrownValue = { name: string; message: string; stack?: string } | { description: string };

export type WorkerMessage =
  | { type: 'ready'; tools: string[] }
  | { type: 'failed'; message: string }
  | { type: 'result'; id: number; output: unknown }
  | { type: 'results'; id: number; outputs: Array<{ output: unknown } | { error: ThrownValue }> }
  | { type: 'error'; id: number; error: ThrownValue }
  | { type: 'log'; id: number; index: number; level: 'info' | 'warn' | 'error'; message: string }
  | { type: 'pong'; id: number };

export interface ToolWorkerData {
  /** The user's module, absolute (a training config), and the code the trainer compiled from it. */
  file: string;
  code: string;
  /** The tools to run, by name, from the module's default export's `tools`. */
  tools: string[];
  /**
   * Instead of the config's `tools`: the one tool a module exports as `selector` finds it
   * (`rollout-studio run-tool FILE --tool NAME | --class NAME | --export PATH`).
   */
  selector?: ToolSelector;
}
