import * as inspector from 'node:inspector';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { RAW_ARGUMENTS, type ToolContext } from '../../foundations/tools/context';
import type { ToolOutput } from '../../foundations/tools/result';
import { withoutTrainerFrames } from '../../foundations/tools/runner';
import { Tool, type ToolInvocation } from '../../foundations/tools/tool';
import type { ToolSelector } from '../../contract/protocol/authoring';
import { rethrown } from './thrownValue';
import { answersPing, workerEntry } from './workerEntry';
import type { HostMessage, ToolWorkerData, WorkerInvocation, WorkerMessage } from './toolWorkerMessages';

/**
 * Runs a config's tools in a worker thread (toolWorker.ts), where a deadline can stop them.
 *
 * On the trainer's thread a tool that never yields (a busy loop, a regular expression
 * backtracking on what the policy wrote) cannot be stopped: no timer fires until it returns, so
 * the run hangs with it. In a worker, the call's timeout fires on the trainer's thread as usual
 * (the runner reports `timeout` and the rollout goes on); the worker is then asked to answer a
 * ping, and one that does not answer within PING_GRACE_MS is blocked: it is terminated, the
 * calls still in it fail, and the next call starts a fresh worker, which evaluates the module
 * again. A slow but responsive call is left to finish in the background, as on the trainer's thread.
 *
 * The worker evaluates the same compiled module the trainer loaded, so each tool there is made
 * by the same code: its closures over the config, its zod schema (the worker parses the raw
 * arguments itself) and `instanceof` checks inside it behave as they would on the trainer's
 * thread. What does not carry over is shared live state: the trainer's instance of a tool
 * (whose `reward` hook runs on the trainer's thread, after the trajectory) and the worker's are
 * two objects. A tool whose hook reads what `execute` stored passes it in its result's `data`,
 * or is marked `isolation: 'trainer'`.
 *
 * Under the Node inspector (Debug Tool, `debugTools`) tools stay on the trainer's thread, so
 * breakpoints in them hit where the debugger is attached.
 */

/** How long a worker has to answer a ping after one of its calls ran out of time. */

interface PendingCall {
  tool: string;
  resolve: (message: WorkerMessage) => void;
  reject: (error: Error) => void;
  /** The call's loggers, by position in a batch. */
  logs: ToolContext<object>['log'][];
}

/** A failure of the tool worker itself: said in words, without the trainer's stack frames (they would reach the policy's observation). */
function workerFailure(message: string): Error {
  const error = new Error(message);
  error.stack = `Error: ${message}`;
  return error;
}

function invocation(args: unknown, ctx: ToolContext<object>): WorkerInvocation {
  const raw = (ctx as { [RAW_ARGUMENTS]?: unknown })[RAW_ARGUMENTS] ?? args;
  return {
    rawArgs: raw,
    ctx: { trajectory: ctx.trajectory, turn: ctx.turn, callIndex: ctx.callIndex, row: ctx.row, rowArgs: ctx.rowArgs },
  };
}

export class ToolHost {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private readonly pending = new Map<number, PendingCall>();
  private readonly pings = new Map<number, () => void>();
  private nextId = 1;
  private closed = false;
  /** Workers started so far (the first, and one after each that was stopped). */
  starts = 0;

  private constructor(private readonly data: ToolWorkerData) {}

  /** Start the worker and wait until it has evaluated the module and found every tool. */
  static async start(data: ToolWorkerData): Promise<ToolHost> {
    const host = new ToolHost(data);
    await host.ensureWorker();
    return host;
  }

  private ensureWorker(): Promise<Worker> {
    if (this.closed) return Promise.reject(workerFailure('the tool worker is closed'));
    if (this.worker) return Promise.resolve(this.worker);
    this.starting ??= new Promise<Worker>((resolve, reject) => {
      const entry = workerEntry('tool-worker.js', 'toolWorker.ts');
      const worker = new Worker(entry.script, { eval: entry.eval, workerData: this.data });
      this.starts++;
      let ready = false;
      const onStartMessage = (message: WorkerMessage) => {
        if (message.type === 'ready') {
          ready = true;
          worker.off('message', onStartMessage);
          worker.on('message', (m: WorkerMessage) => this.receive(m));
          this.worker = worker;
          this.starting = undefined;
          resolve(worker);
        } else if (message.type === 'failed') {
          this.starting = undefined;
          void worker.terminate();
          reject(workerFailure(`the tool worker could not load ${this.data.file}: ${message.message}`));
        }
      };
      worker.on('message', onStartMessage);
      // The worker went away by itself (an uncaught error in a tool's stray callback, say): its calls fail, the next call starts another.
      const lost = (reason: string) => {
        if (!ready) {
          this.starting = undefined;
          reject(workerFailure(reason));
        } else if (this.worker === worker) {
          this.worker = undefined;
          this.failPending(reason);
        }
      };
      // The reason becomes the call's observation, which the policy reads: the file's name, not where it lives on this machine.
      const file = path.basename(this.data.file);
      worker.on('error', (error) =>
        lost(
          `the tool worker of ${file} failed: ${error instanceof Error ? withoutTrainerFrames(error.stack ?? error.message) : String(error)}`,
        ),
      );
      worker.on('exit', (code) =>
        lost(
          `the tool worker of ${file} exited (code ${code}): process.exit in a tool or its module ends the worker, not the run; the call fails and the next one starts a new worker`,
        ),
      );
    });
    return this.starting;
  }

  private failPending(reason: string): void {
    for (const call of this.pending.values()) call.reject(workerFailure(reason));
    this.pending.clear();
    for (const pong of this.pings.values()) pong();
    this.pings.clear();
  }

  private receive(message: WorkerMessage): void {
    if (message.type === 'pong') {
      this.pings.get(message.id)?.();
      this.pings.delete(message.id);
      return;
    }
    if (message.type === 'ready' || message.type === 'failed') return;
    const call = this.pending.get(message.id);
    if (!call) return;
    if (message.type === 'log') {
      call.logs[message.index]?.[message.level](message.message);
      return;
    }
    this.pending.delete(message.id);
    call.resolve(message);
  }

  private async send(
    message: Extract<HostMessage, { type: 'call' | 'batch' }>,
    logs: PendingCall['logs'],
    signal: AbortSignal,
  ): Promise<WorkerMessage> {
    const worker = await this.ensureWorker();
    const result = new Promise<WorkerMessage>((resolve, reject) =>
      this.pending.set(message.id, { tool: message.tool, resolve, reject, logs }),
    );
    const onAbort = () => {
      worker.postMessage({
        type: 'abort',
        id: message.id,
        reason: String((signal.reason as Error | undefined)?.message ?? 'aborted'),
      } satisfies HostMessage);
      void this.checkResponsive(worker, message.tool);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      try {
        worker.postMessage(message);
      } catch {
        // A context that cannot be cloned (a value in an earlier call's data): send it as JSON instead.
        worker.postMessage(
          JSON.parse(JSON.stringify(message, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))),
        );
      }
    } catch (error) {
      this.pending.delete(message.id);
      signal.removeEventListener('abort', onAbort);
      throw Object.assign(
        workerFailure(`the call of "${message.tool}" cannot be sent to its tool worker: ${(error as Error).message}`),
        { cause: error },
      );
    }
    try {
      return await result;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** After a call ran out of time: a worker that cannot answer a ping is stuck in it and is replaced. */
  private async checkResponsive(worker: Worker, tool: string): Promise<void> {
    const id = this.nextId++;
    const answered = await answersPing(worker, this.pings, id);
    if (answered || this.worker !== worker) return;
    this.worker = undefined;
    this.failPending(
      `the tool worker was restarted: a call of "${tool}" ran past its timeout without yielding (a synchronous loop?), which stopped every call running beside it`,
    );
    await worker.terminate();
  }

  async call(tool: string, args: unknown, ctx: ToolContext<object>): Promise<unknown> {
    const reply = await this.send(
      { type: 'call', id: this.nextId++, tool, invocation: invocation(args, ctx) },
      [ctx.log],
      ctx.signal,
    );
    if (reply.type === 'error') throw rethrown(reply.error);
    return (reply as Extract<WorkerMessage, { type: 'result' }>).output;
  }

  async batch(tool: string, calls: readonly ToolInvocation<unknown, object>[]): Promise<unknown[]> {
    const signal = calls[0]?.ctx.signal ?? new AbortController().signal;
    const reply = await this.send(
      { type: 'batch', id: this.nextId++, tool, invocations: calls.map((c) => invocation(c.args, c.ctx)) },
      calls.map((c) => c.ctx.log),
      signal,
    );
    if (reply.type === 'error') throw rethrown(reply.error);
    const outputs = (reply as Extract<WorkerMessage, { type: 'results' }>).outputs;
    return Array.isArray(outputs) ? outputs.map((o) => ('error' in o ? rethrown(o.error) : o.output)) : outputs;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failPending('the tool worker was closed');
    const worker = this.worker ?? (await this.starting?.catch(() => undefined));
    this.worker = undefined;
    await worker?.terminate();
  }
}

/** A tool of the user's module whose `execute` (and `executeBatch`) run in the tool worker; everything else is the original's. */
export class WorkerTool extends Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Tool['parameters'];

  constructor(
    readonly original: Tool,
    private readonly host: ToolHost,
  ) {
    super();
    this.name = original.name;
    this.description = original.description;
    this.parameters = original.parameters;
    this.timeoutMs = original.timeoutMs;
    this.concurrency = original.concurrency;
    this.maxBatchSize = original.maxBatchSize;
    this.isolation = original.isolation;
    if (original.reward) this.reward = original.reward.bind(original);
    if (original.executeBatch)
      this.executeBatch = async (calls) => (await this.host.batch(this.name, calls as never)) as (ToolOutput | Error)[];
  }

  async execute(args: unknown, ctx: ToolContext): Promise<ToolOutput> {
    return (await this.host.call(this.name, args, ctx as never)) as ToolOutput;
  }
}

/**
 * One tool of a module, found by `selector`, placed in a worker as a rollout places a config's
 * tools (run-tool: a busy loop times out, `process.exit` in the tool ends only its worker). Stays
 * on this thread when it asks to (`isolation: 'trainer'`) or under the inspector (Debug Tool).
 */
export async function isolateSelectedTool(
  file: string,
  code: string,
  tool: Tool,
  selector: ToolSelector,
): Promise<{ tool: Tool; close(): Promise<void> }> {
  if (tool.isolation !== 'worker' || inspector.url() !== undefined) return { tool, close: async () => undefined };
  const host = await ToolHost.start({ file, code, tools: [tool.name], selector });
  return { tool: new WorkerTool(tool, host), close: () => host.close() };
}

/**
 * The tools of a config as a run uses them: those with `isolation: 'worker'` moved to one tool
 * worker for the module, the others as they are. Nothing moves under the inspector (see above).
 */
export async function isolateTools(
  file: string,
  code: string,
  tools: readonly Tool[],
): Promise<{ tools: Tool[]; host?: ToolHost; close(): Promise<void> }> {
  const moving = tools.filter((t) => t.isolation === 'worker');
  if (moving.length === 0 || inspector.url() !== undefined) return { tools: [...tools], close: async () => undefined };
  const host = await ToolHost.start({ file, code, tools: moving.map((t) => t.name) });
  return {
    tools: tools.map((t) => (t.isolation === 'worker' ? new WorkerTool(t, host) : t)),
    host,
    close: () => host.close(),
  };
}
