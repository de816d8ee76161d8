import { fork, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  AgentError,
  readAgentOutcome,
  type AgentContext,
  type AgentOutcome,
  type AgentRunner,
} from '../../pipeline/rollout/gateway/agentRunner';
import type { DatasetRow } from '../../foundations/data/row';
import type { AgentHostMessage, AgentHostReply } from './agentHostMessages';
import { compileUserModule } from './loadUserModule';

/**
 * The user's agent, run for the training's rollout sessions (pipeline/rollout/gateway):
 *
 *   ModuleAgentRunner   a TypeScript or JavaScript module exporting `async (row, context) => …`,
 *                       compiled as configs are and run in one host process (agentHost.ts) for
 *                       many sessions at a time. A session whose time is up is aborted (its
 *                       `context.signal`); a host that does not answer a ping then (an agent stuck
 *                       in a loop) is killed, failing the sessions it held, and the next session
 *                       starts a fresh one.
 *   CommandAgentRunner  any program, one process per session: the row as JSON on stdin,
 *                       `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `OPENAI_MODEL` in its environment
 *                       (what the OpenAI SDKs read), and `ROLLOUT_STUDIO_RESULT_FILE`, a file it may
 *                       write `{ "answer": …, "reward": … }` to. Exit 0 is success; anything else
 *                       fails the session with its exit status and the end of its stderr.
 *
 * What the agent prints goes to the trainer's log, prefixed with its session.
 */

/** How long an aborted session has to end before its process is stopped (or its host pinged). */
export const ABORT_GRACE_MS = 2_000;
const STDERR_TAIL = 2_000;

type Log = (line: string) => void;

function forward(stream: NodeJS.ReadableStream | null, prefix: string, log: Log | undefined, tail?: { text: string }) {
  let partial = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    if (tail) tail.text = (tail.text + chunk).slice(-STDERR_TAIL);
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) log?.(`${prefix}${line}`);
  });
  stream?.on('end', () => {
    if (partial) log?.(`${prefix}${partial}`);
  });
}

/** The host script: next to this bundle when built, the TypeScript source under tsx. */
function hostEntry(): { script: string; execArgv: string[] } {
  const bundled = path.join(__dirname, 'agent-host.js');
  if (__filename.endsWith('.js') && fs.existsSync(bundled)) return { script: bundled, execArgv: [] };
  return { script: path.join(__dirname, 'agentHost.ts'), execArgv: ['--require', require.resolve('tsx/cjs')] };
}

interface Running {
  resolve(value: AgentOutcome | undefined): void;
  reject(error: AgentError): void;
}

/** One host process and the sessions it runs. */
class AgentHost {
  private nextId = 0;
  private readonly running = new Map<number, Running>();
  private readonly stderr = { text: '' };
  private pongs: (() => void)[] = [];
  exited = false;
  /** A session of it ran out of time: new sessions go to a fresh host; this one ends with its last session. */
  retired = false;

  private constructor(private readonly child: ChildProcess) {}

  static async start(
    file: string,
    code: string,
    exportName: string | undefined,
    log: Log | undefined,
  ): Promise<AgentHost> {
    const entry = hostEntry();
    const child = fork(entry.script, [], {
      // Not the trainer's own flags (a test runner's, --inspect's port): a debugger attaches through NODE_OPTIONS.
      execArgv: entry.execArgv,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    const host = new AgentHost(child);
    forward(child.stdout, 'agent: ', log);
    forward(child.stderr, 'agent: ', log, host.stderr);
    child.on('message', (m: AgentHostReply) => host.receive(m));
    child.on('exit', (codeNumber, signal) => host.failAll(`the agent host exited (${signal ?? `code ${codeNumber}`})`));
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: AgentHostReply) => {
        if (m.type === 'loaded') resolve();
        else if (m.type === 'load-failed') reject(new AgentError(m.message, 'start'));
        else return;
        child.off('message', onMessage);
      };
      child.on('message', onMessage);
      child.once('exit', () =>
        reject(new AgentError(`the agent host exited while loading ${file}: ${host.stderr.text.trim()}`, 'start')),
      );
      child.send({ type: 'load', file, code, exportName } satisfies AgentHostMessage);
    });
    return host;
  }

  private receive(message: AgentHostReply): void {
    if (message.type === 'pong') {
      for (const pong of this.pongs.splice(0)) pong();
      return;
    }
    if (message.type !== 'done' && message.type !== 'error') return;
    const running = this.running.get(message.id);
    if (!running) return;
    this.running.delete(message.id);
    if (this.retired && this.running.size === 0) this.kill();
    if (message.type === 'error') running.reject(new AgentError(`the agent threw: ${message.message}`, 'threw'));
    else {
      try {
        running.resolve(readAgentOutcome(message.value));
      } catch (error) {
        running.reject(error as AgentError);
      }
    }
  }

  private failAll(why: string): void {
    this.exited = true;
    const detail = this.stderr.text.trim();
    for (const running of this.running.values())
      running.reject(new AgentError(`${why}${detail ? `; its stderr ends: ${detail.slice(-500)}` : ''}`, 'exit'));
    this.running.clear();
  }

  run(row: DatasetRow, context: AgentContext): Promise<AgentOutcome | undefined> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onAbort = () => void this.abort(id, context.signal.reason);
      context.signal.addEventListener('abort', onAbort, { once: true });
      const done = () => context.signal.removeEventListener('abort', onAbort);
      this.running.set(id, {
        resolve: (v) => (done(), resolve(v)),
        reject: (e) => (done(), reject(e)),
      });
      this.child.send({
        type: 'run',
        id,
        row: JSON.parse(JSON.stringify(row)),
        context: { baseURL: context.baseURL, apiKey: context.apiKey, model: context.model },
      } satisfies AgentHostMessage);
    });
  }

  /** Ends a session: the agent is told (its signal); one still running after the grace is dropped, and a host that does not answer a ping is killed. */
  private async abort(id: number, reason: unknown): Promise<void> {
    if (this.exited) return;
    // New sessions go to a fresh host from now on: this one may be blocked.
    this.retired = true;
    this.child.send({ type: 'abort', id } satisfies AgentHostMessage);
    await new Promise((r) => setTimeout(r, ABORT_GRACE_MS));
    const running = this.running.get(id);
    if (!running) return;
    this.running.delete(id);
    running.reject(new AgentError(reason instanceof Error ? reason.message : String(reason), 'timeout'));
    if (this.running.size === 0) return this.kill();
    const answered = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), ABORT_GRACE_MS);
      this.pongs.push(() => (clearTimeout(timer), resolve(true)));
      this.child.send({ type: 'ping' } satisfies AgentHostMessage);
    });
    if (!answered) this.kill();
  }

  kill(): void {
    if (this.exited) return;
    this.failAll(
      'the agent host did not answer after a session ran out of time (an agent blocking its thread?) and was stopped',
    );
    this.child.kill('SIGKILL');
  }
}

export class ModuleAgentRunner implements AgentRunner {
  private host: Promise<AgentHost> | undefined;
  private code: Promise<string> | undefined;
  /** Every host started, retired ones included: closing ends them all. */
  private readonly started: Promise<AgentHost>[] = [];

  constructor(
    private readonly file: string,
    private readonly exportName: string | undefined,
    private readonly log?: Log,
  ) {}

  async run(row: DatasetRow, context: AgentContext & { session: string }): Promise<AgentOutcome | undefined> {
    this.code ??= compileUserModule(this.file);
    const code = await this.code;
    let host = this.host ? await this.host.catch(() => undefined) : undefined;
    if (!host || host.exited || host.retired) {
      this.host = AgentHost.start(this.file, code, this.exportName, this.log);
      this.started.push(this.host);
      host = await this.host;
    }
    return host.run(row, context);
  }

  async close(): Promise<void> {
    for (const host of this.started.splice(0)) (await host.catch(() => undefined))?.kill();
    this.host = undefined;
  }
}

export interface AgentCommand {
  command: readonly string[];
  /** The folder it runs in (default: the config's). */
  cwd: string;
  env?: Record<string, string> | undefined;
}

export class CommandAgentRunner implements AgentRunner {
  private readonly resultDir: string;
  constructor(
    private readonly spec: AgentCommand,
    private readonly log?: Log,
  ) {
    this.resultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-agent-'));
  }

  run(row: DatasetRow, context: AgentContext & { session: string }): Promise<AgentOutcome | undefined> {
    const [program, ...args] = this.spec.command;
    const resultFile = path.join(this.resultDir, `${context.session}.json`);
    const shown = this.spec.command.join(' ');
    return new Promise((resolve, reject) => {
      const child = spawn(program, args, {
        cwd: this.spec.cwd,
        env: {
          ...process.env,
          ...this.spec.env,
          OPENAI_BASE_URL: context.baseURL,
          OPENAI_API_KEY: context.apiKey,
          OPENAI_MODEL: context.model,
          ROLLOUT_STUDIO_RESULT_FILE: resultFile,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const stderr = { text: '' };
      forward(child.stdout, `agent ${context.session.slice(0, 8)}: `, this.log);
      forward(child.stderr, `agent ${context.session.slice(0, 8)}: `, this.log, stderr);
      child.stdin.on('error', () => undefined); // a program that does not read its input
      child.stdin.end(JSON.stringify(row) + '\n');
      let killTimer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        child.kill('SIGTERM');
        killTimer = setTimeout(() => child.kill('SIGKILL'), ABORT_GRACE_MS);
      };
      context.signal.addEventListener('abort', onAbort, { once: true });
      child.on('error', (error) =>
        reject(new AgentError(`cannot start the agent command ${shown}: ${error.message}`, 'start')),
      );
      child.on('close', (code, signal) => {
        clearTimeout(killTimer);
        context.signal.removeEventListener('abort', onAbort);
        if (context.signal.aborted) {
          const reason = context.signal.reason;
          return reject(new AgentError(reason instanceof Error ? reason.message : String(reason), 'timeout'));
        }
        if (code !== 0) {
          const tail = stderr.text.trim().slice(-500);
          return reject(
            new AgentError(
              `the agent command ${shown} exited with ${signal ?? `code ${code}`}${tail ? `; its stderr ends: ${tail}` : ''}`,
              'exit',
            ),
          );
        }
        try {
          resolve(readResultFile(resultFile));
        } catch (error) {
          reject(error as AgentError);
        }
      });
    });
  }

  async close(): Promise<void> {
    fs.rmSync(this.resultDir, { recursive: true, force: true });
  }
}

function readResultFile(file: string): AgentOutcome | undefined {
  if (!fs.existsSync(file)) return undefined;
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(file, { force: true });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AgentError(`ROLLOUT_STUDIO_RESULT_FILE: not JSON (${(error as Error).message})`, 'result');
  }
  return readAgentOutcome(value);
}
