import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  parseWith,
  ProtocolError,
  TrainerMessage,
  type ArgumentCheck,
  type ToolInfo,
  type ToolRunReport,
  type ToolSelector,
  type ToolSessionRequest,
} from '../../trainer/contract/protocol';
import { stamped } from '../protocolStamp';
import { TrainerProcessError, type TrainerRuntime } from '../trainerProcess';
import { spawnWorkspaceCode, type WorkspaceCodeUse } from '../workspaceCode';

/**
 * A trainer process holding one tool loaded (`rollout-studio run-tool --session --ipc`): Run
 * Tool… checks the arguments against the tool's schema as the user types, then runs the call;
 * Debug Tool does the same with the process's inspector open and a debugger attached. The tool's
 * module is compiled and loaded once, in the trainer process — never in the extension host.
 * No `vscode` here: unit tests drive it against the real CLI.
 */

export interface ToolSessionOptions {
  /** What loading the tool runs of the workspace, for the refusal in Restricted Mode (workspaceCode.ts). */
  use: WorkspaceCodeUse;
  runtime: TrainerRuntime;
  /** The trainer CLI (dist/trainer/cli.js; trainer/bridges/cli/main.ts under tsx in tests). */
  cliPath: string;
  /** Node options before the script (tests: `--import tsx`). */
  nodeArgs?: string[];
  file: string;
  selector?: ToolSelector;
  /** Open the process's inspector for a debugger (Debug Tool). */
  inspect?: boolean;
  cwd?: string;
  /** How long loading the tool may take. */
  startTimeoutMs?: number;
  /** The process's stdout and stderr (the tool's console output among it), as it comes. */
  onOutput?: (text: string) => void;
}

/** Resolves once the child's stdout and stderr have ended (or after a moment: a grandchild may hold them open). */
function drained(child: ChildProcess): Promise<void> {
  const ended = (stream: NodeJS.ReadableStream | null) =>
    new Promise<void>((resolve) =>
      stream && !(stream as { readableEnded?: boolean }).readableEnded
        ? stream.once('end', resolve).once('close', resolve)
        : resolve(),
    );
  return Promise.race([
    Promise.all([ended(child.stdout), ended(child.stderr)]).then(() => undefined),
    new Promise<void>((resolve) => setTimeout(resolve, 500)),
  ]);
}

type Pending = { resolve: (message: TrainerMessage) => void; reject: (error: Error) => void };

/** The command line of `rollout-studio run-tool` for the options' file, tool and inspector. */
function toolSessionArgs(options: ToolSessionOptions): string[] {
  const args = ['run-tool', options.file, '--session', '--ipc'];
  if (options.selector) {
    const { selector } = options;
    if (selector.by === 'mcp') args.push('--mcp-server', selector.server, '--tool', selector.tool);
    else
      args.push(
        selector.by === 'name' ? '--tool' : selector.by === 'class' ? '--class' : '--export',
        selector.by === 'export' ? selector.path : selector.name,
      );
  }
  if (options.inspect) args.push('--inspect');
  return args;
}

/** A session being started: what the child's handlers share, before the tool is loaded and after. */
interface Starting {
  child: ChildProcess;
  options: ToolSessionOptions;
  /** The last 8000 characters of the process's stderr. */
  output: { stderr: string };
  /** Set once the tool is loaded. */
  session: ToolSession | undefined;
  /** What went wrong before the tool was loaded; the start rejects with it when the process exits. */
  fatal: TrainerProcessError | undefined;
  timer: NodeJS.Timeout | undefined;
  resolve: (session: ToolSession) => void;
  reject: (error: Error) => void;
}

export class ToolSession {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private failure: Error | undefined;
  private exited = false;
  private readonly exitListeners: (() => void)[] = [];

  private constructor(
    private readonly child: ChildProcess,
    readonly tool: ToolInfo,
    readonly file: string,
    readonly inspectorUrl: string | undefined,
  ) {}

  /** Starts the process and resolves once the tool is loaded; rejects with what went wrong (compile error, no such tool, …). */
  static start(options: ToolSessionOptions): Promise<ToolSession> {
    const { runtime, cliPath } = options;
    if (!fs.existsSync(cliPath)) {
      return Promise.reject(
        new TrainerProcessError(
          'The trainer is missing from the extension.',
          `Expected ${cliPath}. Rebuild the extension (npm run build) or reinstall it.`,
        ),
      );
    }
    let child: ChildProcess;
    try {
      child = spawnWorkspaceCode(
        options.use,
        runtime.command,
        [...(options.nodeArgs ?? []), cliPath, ...toolSessionArgs(options)],
        { cwd: options.cwd ?? path.dirname(options.file), env: runtime.env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
      );
    } catch (refusal) {
      return Promise.reject(refusal as Error);
    }
    const output = { stderr: '' };
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => options.onOutput?.(chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      output.stderr = (output.stderr + chunk).slice(-8000);
      options.onOutput?.(chunk);
    });

    return new Promise((resolve, reject) => {
      const start: Starting = {
        child,
        options,
        output,
        session: undefined,
        fatal: undefined,
        timer: undefined,
        resolve,
        reject,
      };
      start.timer = setTimeout(() => {
        start.fatal = new TrainerProcessError(
          'The tool did not load in time.',
          `Loading ${options.file} took more than ${Math.round((options.startTimeoutMs ?? 120_000) / 1000)} s; the process was stopped.`,
        );
        child.kill('SIGKILL');
      }, options.startTimeoutMs ?? 120_000);
      child.on('message', (raw) => ToolSession.onStartMessage(start, raw));
      child.on('error', (error) => ToolSession.onStartError(start, error));
      // 'exit', not 'close': when this side disconnects, Node (20) never emits 'close'. The output is read to its end first.
      child.on(
        'exit',
        (code, signal) => void drained(child).then(() => ToolSession.onProcessExit(start, code, signal)),
      );
    });
  }

  /** A problem of the process: the session's failure once the tool is loaded, else the start's. */
  private static failStart(start: Starting, problem: TrainerProcessError): void {
    if (start.session) start.session.fail(problem);
    else start.fatal ??= problem;
  }

  private static onStartMessage(start: Starting, raw: unknown): void {
    let message: TrainerMessage;
    try {
      message = parseWith(TrainerMessage, raw, 'message from the trainer');
    } catch (error) {
      const detail = error instanceof ProtocolError ? error.message : String(error);
      ToolSession.failStart(
        start,
        new TrainerProcessError(
          'The trainer sent a message this extension does not understand.',
          `${detail}. Rebuild or reinstall the extension.`,
        ),
      );
      start.child.kill();
      return;
    }
    const { session } = start;
    if (message.type === 'tool.ready' && !session) {
      clearTimeout(start.timer);
      start.session = new ToolSession(start.child, message.tool, message.file, message.inspectorUrl);
      start.resolve(start.session);
    } else if (message.type === 'fatal') {
      ToolSession.failStart(
        start,
        new TrainerProcessError(
          session ? 'The tool session failed.' : 'The tool could not be loaded.',
          message.message,
        ),
      );
    } else if (
      session &&
      (message.type === 'tool.checked' || message.type === 'tool.result') &&
      message.id !== undefined
    ) {
      session.settle(message.id, message);
    }
  }

  private static onStartError(start: Starting, error: Error): void {
    clearTimeout(start.timer);
    const problem = new TrainerProcessError(
      `Could not start the trainer with ${start.options.runtime.description}.`,
      `${error.message}. Check the setting rolloutStudio.trainer.nodePath.`,
    );
    if (start.session) start.session.fail(problem);
    else start.reject(problem);
  }

  /** The process ended (its output read): a loaded session's pending calls fail; an unloaded start rejects. */
  private static onProcessExit(start: Starting, code: number | null, signal: NodeJS.Signals | null): void {
    clearTimeout(start.timer);
    const tail = start.output.stderr.trim().split('\n').slice(-8).join('\n');
    const { session } = start;
    if (session) {
      session.exited = true;
      if (session.pending.size)
        session.fail(
          new TrainerProcessError(
            `The tool process ${signal ? `was killed by ${signal}` : `exited with code ${code}`} during a call.`,
            tail || 'It printed nothing.',
          ),
        );
      for (const listener of session.exitListeners) listener();
      return;
    }
    start.reject(
      start.fatal ??
        new TrainerProcessError(
          `The trainer process ${signal ? `was killed by ${signal}` : `exited with code ${code}`} before the tool was loaded.`,
          tail || `It was started with ${start.options.runtime.description}.`,
        ),
    );
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const { reject } of this.pending.values()) reject(error);
    this.pending.clear();
  }

  private settle(id: number, message: TrainerMessage): void {
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    waiting?.resolve(message);
  }

  private request(type: ToolSessionRequest['type'], args: unknown): Promise<TrainerMessage> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.exited || !this.child.connected)
      return Promise.reject(new TrainerProcessError('The tool process has ended.', 'Run the tool again.'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      const request = stamped<ToolSessionRequest>({ type, id, args });
      this.child.send(request, (error) => {
        if (error && this.pending.delete(id))
          reject(new TrainerProcessError('Could not reach the tool process.', error.message));
      });
    });
  }

  /** The arguments checked against the tool's zod schema (the tool does not run). */
  async check(args: unknown): Promise<ArgumentCheck> {
    const message = await this.request('tool.check', args);
    if (message.type !== 'tool.checked')
      throw new TrainerProcessError(
        'The tool process answered out of turn.',
        `expected tool.checked, got ${message.type}`,
      );
    return message.check;
  }

  /** One call of the tool, through the trainer's ToolRunner (its timeout included). */
  async run(args: unknown): Promise<ToolRunReport> {
    const message = await this.request('tool.run', args);
    if (message.type !== 'tool.result')
      throw new TrainerProcessError(
        'The tool process answered out of turn.',
        `expected tool.result, got ${message.type}`,
      );
    return message.report;
  }

  get running(): boolean {
    return !this.exited;
  }

  onExit(listener: () => void): void {
    if (this.exited) listener();
    else this.exitListeners.push(listener);
  }

  /** Ends the process: disconnecting tells it to exit; a process that does not is killed. */
  close(): void {
    if (this.exited) return;
    if (this.child.connected) this.child.disconnect();
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    killer.unref();
    this.onExit(() => clearTimeout(killer));
  }
}
