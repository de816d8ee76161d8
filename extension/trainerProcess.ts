import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseWith, ProtocolError, TrainerMessage } from '../trainer/protocol';

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
export function resolveTrainerRuntime(configuredNodePath: string | undefined, baseEnv: NodeJS.ProcessEnv = process.env): TrainerRuntime {
  if (configuredNodePath && configuredNodePath.trim()) {
    const command = configuredNodePath.trim();
    return { command, env: { ...baseEnv }, description: `the Node.js set in rolloutStudio.trainer.nodePath (${command})` };
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

export interface TrainerRequest {
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
export function runTrainer(request: TrainerRequest): Promise<TrainerMessage[]> {
  const { runtime, cliPath, args, timeoutMs = 300_000 } = request;
  if (!fs.existsSync(cliPath)) {
    return Promise.reject(
      new TrainerProcessError('The trainer is missing from the extension.', `Expected ${cliPath}. Rebuild the extension (npm run build) or reinstall it.`),
    );
  }
  return new Promise((resolve, reject) => {
    const messages: TrainerMessage[] = [];
    let stderr = '';
    let failure: TrainerProcessError | undefined;
    let settled = false;
    const finish = (error?: TrainerProcessError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(messages);
    };
    const child = spawn(runtime.command, [cliPath, ...args], {
      cwd: request.cwd ?? path.dirname(cliPath),
      env: runtime.env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const timer = setTimeout(() => {
      failure = new TrainerProcessError('The trainer did not answer in time.', `It ran for ${Math.round(timeoutMs / 1000)} s without finishing and was stopped.`);
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout?.resume();
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-8000)));
    child.on('message', (raw) => {
      try {
        const message = parseWith(TrainerMessage, raw, 'message from the trainer');
        if (message.type === 'fatal') {
          failure ??= new TrainerProcessError('The trainer failed.', message.message);
          return;
        }
        messages.push(message);
        request.onMessage?.(message);
      } catch (error) {
        const detail = error instanceof ProtocolError ? error.message : String(error);
        failure ??= new TrainerProcessError(
          'The trainer sent a message this extension does not understand.',
          `${detail}. The trainer and the extension may come from different builds: rebuild or reinstall the extension.`,
        );
        child.kill();
      }
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const hint =
        error.code === 'ENOENT'
          ? 'The executable does not exist: fix or clear the setting rolloutStudio.trainer.nodePath.'
          : error.code === 'EACCES'
            ? 'The executable is not executable: fix the setting rolloutStudio.trainer.nodePath.'
            : 'Check the setting rolloutStudio.trainer.nodePath.';
      finish(new TrainerProcessError(`Could not start the trainer with ${runtime.description}.`, `${error.message}. ${hint}`));
    });
    child.on('close', (code, signal) => {
      if (failure) return finish(failure);
      const tail = stderr.trim().split('\n').slice(-8).join('\n');
      if (code === 0) return finish();
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      finish(new TrainerProcessError(`The trainer process ${how}.`, tail ? `Its last output:\n${tail}` : `It was started with ${runtime.description}.`));
    });
  });
}
