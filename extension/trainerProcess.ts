import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { withAllocatorEnv } from '../trainer/contract/allocatorEnv';
import {
  ControlMessage,
  parseWith,
  ProtocolError,
  TrainerMessage,
  WAIT_FOR_DEBUGGER_ENV,
  type Unstamped,
} from '../trainer/contract/protocol';
import { stamped } from './protocolStamp';
import { spawnWorkspaceCode, type WorkspaceCodeUse } from './workspaceCode';

/**
 * Starting the trainer process and talking to it. The extension never loads onnxruntime
 * itself: every tensor op happens in this child process, which speaks the zod-checked
 * protocol over Node's IPC channel. Nothing here imports `vscode`, so it is unit-tested in
 * plain Node.
 */

/** Which runtime runs the trainer, and how. */
export interface TrainerRuntime {
  command: string;
  env: NodeJS.ProcessEnv;
  /** In words, for error messages: "VS Code's runtime (Electron 34.3.2 as Node)". */
  description: string;
}

/**
 * The configured Node when there is one; else VS Code's own runtime: Electron run as Node on
 * the desktop, or the extension host's Node when VS Code runs as a server (code-server).
 */
export function resolveTrainerRuntime(
  configuredNodePath: string | undefined,
  baseEnv: NodeJS.ProcessEnv = process.env,
): TrainerRuntime {
  if (configuredNodePath && configuredNodePath.trim()) {
    const command = configuredNodePath.trim();
    return {
      command,
      env: { ...baseEnv },
      description: `the Node.js set in rolloutStudio.trainer.nodePath (${command})`,
    };
  }
  const env = { ...baseEnv, ELECTRON_RUN_AS_NODE: '1' };
  const description = process.versions.electron
    ? `VS Code's runtime (Electron ${process.versions.electron} as Node ${process.versions.node})`
    : `the extension host's Node ${process.versions.node} (${process.execPath})`;
  return { command: process.execPath, env, description };
}

/** A failure to get an answer from the trainer, with what the user should do about it. */
export class TrainerProcessError extends Error {
  constructor(
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${title} ${detail}`);
    this.name = 'TrainerProcessError';
  }
}

/** How the trainer CLI is started: which runtime, which script, with which Node options. */
export interface TrainerLaunch {
  runtime: TrainerRuntime;
  /** The trainer CLI script (dist/trainer/cli.js inside the extension; trainer/bridges/cli/main.ts under tsx in tests). */
  cliPath: string;
  /** Node options before the script, e.g. `['--import', 'tsx']` to run the TypeScript sources. */
  execArgv?: string[];
}

export interface TrainerProcessOptions {
  /** What the process would run of the workspace, for the refusal in Restricted Mode (workspaceCode.ts). */
  use: WorkspaceCodeUse;
  args: string[];
  cwd?: string | undefined;
  /**
   * Start with the Node inspector on a free local port (`--inspect=127.0.0.1:0`), or with
   * `'break'` also waiting for a debugger before running anything. Not `--inspect-brk`: its
   * pause at the bundle's first statement, met while js-debug is still evaluating its setup
   * expressions, crashed Node 20's V8 about one time in two in our tests (a fatal CHECK in
   * ScopeIterator, SIGTRAP). The trainer instead blocks in `inspector.waitForDebugger()`
   * until the debugger says run (trainer/bridges/cli/waitForDebugger.ts), with nothing to pause at.
   */
  inspect?: boolean | 'break' | undefined;
  /** Each validated message, as it arrives (a `fatal` one too). */
  onMessage?: ((message: TrainerMessage) => void) | undefined;
  /** The inspector's WebSocket URL and port, once the trainer prints them. */
  onInspector?: ((inspector: { url: string; port: number }) => void) | undefined;
  /** Each chunk the trainer writes to stderr (stdout is not used with IPC, but is passed on too). */
  onOutput?: ((text: string, stream: 'stdout' | 'stderr') => void) | undefined;
}

/** How a trainer process ended. `error` says what went wrong when it did not end well. */
export interface TrainerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Killed by `stop` (it did not end within the timeout) or by `kill`. */
  killed: boolean;
  error?: TrainerProcessError;
}

/**
 * A trainer process with its IPC channel, for as long as it runs: messages in (validated
 * against the protocol), control messages out, and a clean stop that ends in a kill only when
 * the trainer does not finish in time.
 */
export class TrainerProcess {
  readonly exited: Promise<TrainerExit>;
  private readonly child: ChildProcess;
  private stderr = '';
  private failure: TrainerProcessError | undefined;
  private killed = false;
  private done = false;

  private constructor(launch: TrainerLaunch, options: TrainerProcessOptions) {
    const { runtime, cliPath } = launch;
    const inspect = options.inspect ? ['--inspect=127.0.0.1:0'] : [];
    this.child = spawnWorkspaceCode(
      options.use,
      runtime.command,
      [...inspect, ...(launch.execArgv ?? []), cliPath, ...options.args],
      {
        cwd: options.cwd ?? path.dirname(cliPath),
        env: withAllocatorEnv(
          options.inspect === 'break' ? { ...runtime.env, [WAIT_FOR_DEBUGGER_ENV]: '1' } : runtime.env,
        ),
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      },
    );
    let inspectorSeen = false;
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => options.onOutput?.(chunk, 'stdout'));
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8000);
      const listening = !inspectorSeen && /Debugger listening on (ws:\/\/[^\s]+:(\d+)\/[^\s]+)/.exec(this.stderr);
      if (listening) {
        inspectorSeen = true;
        options.onInspector?.({ url: listening[1], port: Number(listening[2]) });
      }
      options.onOutput?.(chunk, 'stderr');
    });
    this.child.on('message', (raw) => {
      let message: TrainerMessage;
      try {
        message = parseWith(TrainerMessage, raw, 'message from the trainer');
      } catch (error) {
        const detail = error instanceof ProtocolError ? error.message : String(error);
        this.failure ??= new TrainerProcessError(
          'The trainer sent a message this extension does not understand.',
          `${detail}. The trainer and the extension may come from different builds: rebuild or reinstall the extension.`,
        );
        this.kill();
        return;
      }
      if (message.type === 'fatal') this.failure ??= new TrainerProcessError('The trainer failed.', message.message);
      options.onMessage?.(message);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('error', (error: NodeJS.ErrnoException) => {
        const hint =
          error.code === 'ENOENT'
            ? 'The executable does not exist: fix or clear the setting rolloutStudio.trainer.nodePath.'
            : error.code === 'EACCES'
              ? 'The executable is not executable: fix the setting rolloutStudio.trainer.nodePath.'
              : 'Check the setting rolloutStudio.trainer.nodePath.';
        this.failure ??= new TrainerProcessError(
          `Could not start the trainer with ${runtime.description}.`,
          `${error.message}. ${hint}`,
        );
        // A process that never started sends no 'close'.
        if (this.child.pid === undefined) this.finish(resolve, null, null);
      });
      this.child.on('close', (code, signal) => this.finish(resolve, code, signal));
    });
  }

  /** Start the trainer; throws a TrainerProcessError when its script is missing, a RestrictedModeError in Restricted Mode. */
  static start(launch: TrainerLaunch, options: TrainerProcessOptions): TrainerProcess {
    if (!fs.existsSync(launch.cliPath)) {
      throw new TrainerProcessError(
        'The trainer is missing from the extension.',
        `Expected ${launch.cliPath}. Rebuild the extension (npm run build) or reinstall it.`,
      );
    }
    return new TrainerProcess(launch, options);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return !this.done;
  }

  /** The last lines the trainer wrote to stderr. */
  stderrTail(lines = 8): string {
    return this.stderr.trim().split('\n').slice(-lines).join('\n');
  }

  /** Send a control message, stamped with the protocol version; false when the channel is closed (the trainer has ended or is ending). */
  send(message: Unstamped<ControlMessage>): boolean {
    if (this.done || !this.child.connected) return false;
    this.child.send(stamped<ControlMessage>(message), (error) => {
      // The trainer went away between the check and the write: its exit is reported anyway.
      void error;
    });
    return true;
  }

  /**
   * Ask the trainer to stop cleanly (it finishes what it must, marks the run stopped and exits);
   * kill it when it has not exited within `timeoutMs`.
   */
  async stop(timeoutMs: number): Promise<TrainerExit> {
    if (this.done) return this.exited;
    if (!this.send({ type: 'stop' })) this.child.disconnect?.();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const first = await Promise.race([this.exited, timedOut]);
    clearTimeout(timer);
    if (first !== 'timeout') return first;
    this.kill();
    return this.exited;
  }

  kill(): void {
    if (this.done) return;
    this.killed = true;
    this.child.kill('SIGKILL');
  }

  private finish(resolve: (exit: TrainerExit) => void, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.done) return;
    this.done = true;
    let error = this.failure;
    if (!error && code !== 0 && !this.killed) {
      const tail = this.stderrTail();
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      error = new TrainerProcessError(
        `The trainer process ${how}.`,
        tail ? `Its last output:\n${tail}` : 'It wrote nothing to stderr.',
      );
    }
    resolve({ code, signal, killed: this.killed, ...(error ? { error } : {}) });
  }
}

export interface TrainerRequest {
  /** What the command would run of the workspace, for the refusal in Restricted Mode. */
  use: WorkspaceCodeUse;
  runtime: TrainerRuntime;
  /** The trainer CLI script (dist/trainer/cli.js inside the extension). */
  cliPath: string;
  args: string[];
  cwd?: string;
  timeoutMs?: number;
  /** Each validated message, as it arrives. */
  onMessage?: (message: TrainerMessage) => void;
}

/**
 * Run one trainer command to completion and return the messages it sent. Rejects with a
 * `TrainerProcessError` when the process cannot start, sends something that does not
 * validate, reports a fatal error, or exits abnormally.
 */
export async function runTrainer(request: TrainerRequest): Promise<TrainerMessage[]> {
  const { runtime, cliPath, args, timeoutMs = 300_000 } = request;
  const messages: TrainerMessage[] = [];
  const trainer = TrainerProcess.start(
    { runtime, cliPath },
    {
      use: request.use,
      args,
      cwd: request.cwd,
      onMessage: (message) => {
        if (message.type === 'fatal') return;
        messages.push(message);
        request.onMessage?.(message);
      },
    },
  );
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    trainer.kill();
  }, timeoutMs);
  const exit = await trainer.exited;
  clearTimeout(timer);
  if (timedOut)
    throw new TrainerProcessError(
      'The trainer did not answer in time.',
      `It ran for ${Math.round(timeoutMs / 1000)} s without finishing and was stopped.`,
    );
  if (exit.error) throw exit.error;
  if (!exit.killed && exit.code === 0) return messages;
  throw new TrainerProcessError('The trainer process was stopped.', 'It did not finish.');
}
