/**
 * The agent host: a Node process that evaluates the user's agent module (compiled by the trainer,
 * as configs are: loadUserModule.ts) and runs its exported function once per rollout session, many
 * sessions at a time, as the trainer asks over the IPC channel (agentProcess.ts). A process of its
 * own, so an agent that blocks its thread, exits, or crashes takes only its sessions with it, and so
 * the ordinary Node debugger attaches to the user's code as to any child process.
 */
import { evaluateUserModule } from './loadUserModule';
import type { AgentHostMessage, AgentHostReply } from './agentHostMessages';

const running = new Map<number, AbortController>();
let agent: ((row: unknown, context: unknown) => unknown) | undefined;

function reply(message: AgentHostReply): void {
  process.send?.(message);
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  try {
    return `a thrown ${typeof error}: ${JSON.stringify(error)}`;
  } catch {
    return String(error);
  }
}

function load(file: string, code: string, exportName: string | undefined): void {
  const exports = evaluateUserModule(file, code);
  const name = exportName ?? ('default' in exports ? 'default' : 'agent');
  const value = exports[name];
  if (typeof value !== 'function') {
    const found = Object.keys(exports).filter((k) => typeof exports[k] === 'function');
    throw new Error(
      `${file}: ${exportName ? `the export "${exportName}"` : 'the default export (or an export named "agent")'} is not a function; the agent module exports async (row, { baseURL, apiKey, model, signal }) => … (functions it exports: ${found.join(', ') || 'none'})`,
    );
  }
  agent = value as typeof agent;
}

async function run(id: number, row: unknown, context: { baseURL: string; apiKey: string; model: string }) {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const value = await agent!(row, { ...context, signal: controller.signal });
    // What crosses the channel must be plain data: the outcome is checked by the trainer.
    reply({ type: 'done', id, value: value === undefined ? null : JSON.parse(JSON.stringify(value)) });
  } catch (error) {
    reply({ type: 'error', id, message: describe(error) });
  } finally {
    running.delete(id);
  }
}

process.on('message', (message: AgentHostMessage) => {
  switch (message.type) {
    case 'load':
      try {
        load(message.file, message.code, message.exportName);
        reply({ type: 'loaded' });
      } catch (error) {
        reply({ type: 'load-failed', message: describe(error) });
      }
      return;
    case 'run':
      void run(message.id, message.row, message.context);
      return;
    case 'abort':
      running.get(message.id)?.abort(new Error('the session ended'));
      return;
    case 'ping':
      reply({ type: 'pong' });
      return;
  }
});
// An agent's stray rejection is its session's failure at most, never the host's end.
process.on('unhandledRejection', (reason) => process.stderr.write(`agent: unhandled rejection: ${describe(reason)}\n`));
process.on('disconnect', () => process.exit(0));
