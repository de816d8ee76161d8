/**
 * A tool worker: a thread that evaluates the user's config module — the very code the trainer
 * loaded — and runs its tools' `execute` and `executeBatch` on request. The tools here are the
 * module's own instances, made by the same code, so closures over the config, zod schemas and
 * `instanceof` inside the tool behave as on the trainer's thread; a call that never yields can
 * be stopped by terminating this thread (see toolHost.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { ToolContext } from '../../foundations/tools/context';
import { describeThrown } from '../../foundations/tools/runner';
import { Tool } from '../../foundations/tools/tool';
import { thrown } from './thrownValue';
import type { HostMessage, ToolWorkerData, WorkerInvocation, WorkerMessage } from './toolWorkerMessages';
import { evaluateUserModule } from './loadUserModule';
import { selectTool } from './selectTool';

const port = parentPort!;
const data = workerData as ToolWorkerData;
const running = new Map<number, AbortController>();

function post(message: WorkerMessage): void {
  port.postMessage(message);
}

/** The config's tools by name: its default export's `tools`, as the trainer read them (or the one tool `selector` finds). */
function loadTools(): Map<string, Tool> {
  const exports = evaluateUserModule(data.file, data.code);
  if (data.selector) {
    const tool = selectTool(exports, data.selector, data.file);
    return new Map([[tool.name, tool]]);
  }
  const config = (exports['default'] ?? exports['config']) as { tools?: unknown } | undefined;
  const list = Array.isArray(config?.tools) ? config.tools : [];
  const tools = new Map<string, Tool>();
  for (const tool of list) if (tool instanceof Tool) tools.set(tool.name, tool);
  const missing = data.tools.filter((name) => !tools.has(name));
  if (missing.length) {
    throw new Error(
      `${data.file}: evaluated again in the tool worker, its config has no tool named ${missing.map((n) => `"${n}"`).join(', ')} (its tools: ${[...tools.keys()].join(', ') || 'none'}); a config must make the same tools each time it is loaded, or mark such tools isolation: 'trainer'`,
    );
  }
  return tools;
}

async function contextFor(
  tool: Tool,
  id: number,
  index: number,
  invocation: WorkerInvocation,
  signal: AbortSignal,
): Promise<{ args: unknown; ctx: ToolContext<object> }> {
  const parsed = await tool.parameters.safeParseAsync(invocation.rawArgs);
  // The trainer validated these arguments with the same schema; a schema that answers differently here is not deterministic.
  if (!parsed.success)
    throw new TypeError(
      `tool "${tool.name}": the arguments the trainer accepted fail the schema in the tool worker (${parsed.error.issues.map((i) => i.message).join('; ')})`,
    );
  const emit = (level: 'info' | 'warn' | 'error') => (message: string) =>
    post({ type: 'log', id, index, level, message: String(message) });
  const ctx = {
    ...(invocation.ctx as Omit<ToolContext<object>, 'signal' | 'log'>),
    signal,
    log: { info: emit('info'), warn: emit('warn'), error: emit('error') },
  };
  return { args: parsed.data, ctx };
}

/** Send a result back; one that cannot be cloned (a function in its data, say) fails the call with a message saying so. */
function reply(message: WorkerMessage, id: number, toolName: string): void {
  try {
    post(message);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    post({
      type: 'error',
      id,
      error: {
        name: 'TypeError',
        message: `tool "${toolName}" returned a result that cannot leave its worker thread (${reason}); keep a result's data to plain values (objects, arrays, strings, numbers, Map, Set, Date), or give the tool isolation: 'trainer'`,
      },
    });
  }
}

async function serve(tools: Map<string, Tool>, message: HostMessage): Promise<void> {
  if (message.type === 'ping') return post({ type: 'pong', id: message.id });
  if (message.type === 'abort') {
    running.get(message.id)?.abort(new Error(message.reason));
    return;
  }
  const tool = tools.get(message.tool)!;
  const controller = new AbortController();
  running.set(message.id, controller);
  try {
    if (message.type === 'call') {
      const { args, ctx } = await contextFor(tool, message.id, 0, message.invocation, controller.signal);
      const output = await tool.execute(args as never, ctx as never);
      reply({ type: 'result', id: message.id, output }, message.id, tool.name);
    } else {
      const invocations = await Promise.all(
        message.invocations.map((invocation, i) => contextFor(tool, message.id, i, invocation, controller.signal)),
      );
      const outputs = await tool.executeBatch!(invocations as never);
      const list = Array.isArray(outputs)
        ? outputs.map((output) => (output instanceof Error ? { error: thrown(output) } : { output }))
        : outputs;
      reply({ type: 'results', id: message.id, outputs: list as never }, message.id, tool.name);
    }
  } catch (error) {
    post({ type: 'error', id: message.id, error: thrown(error) });
  } finally {
    running.delete(message.id);
  }
}

try {
  const tools = loadTools();
  port.on('message', (message: HostMessage) => void serve(tools, message));
  post({ type: 'ready', tools: [...tools.keys()] });
} catch (error) {
  post({ type: 'failed', message: error instanceof Error ? error.message : describeThrown(error) });
}
