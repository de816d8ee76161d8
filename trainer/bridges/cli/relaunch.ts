/**
 * The CLI starts itself again with the allocator settings (trainer/contract/allocatorEnv.ts)
 * when it was started without them: glibc reads them only at process start, so a process can
 * not give them to itself. The first process (the launcher) then only waits: it relays the stop
 * signals to the second (the trainer) and ends as the trainer ends, with its exit code or its
 * signal, so shells, `timeout`, Docker and systemd see what they would without it.
 *
 * Two things keep the pair acting as one process:
 * - A terminal's Ctrl-C reaches both (they share a process group), and the launcher relays it
 *   too; the training command takes a repeat of the same signal within a second as the same
 *   request (trainCommand's `stopOnSignals`), so one Ctrl-C still means "stop cleanly".
 * - A launcher killed with SIGKILL cannot relay anything. The trainer holds the read end of a
 *   pipe whose write end only the launcher has; when the launcher dies the pipe closes, and the
 *   trainer ends with SIGKILL too, as it would have without the launcher. The pipe is watched from
 *   a thread of its own, so a trainer whose main thread is blocked still goes.
 *
 * Not relaunched: a process the extension started (it sets the variables itself, and has the IPC
 * channel), one under the Node inspector (the second would want the same port), one whose user
 * set any MALLOC_* variable, and the commands that hold no model (`pull`, `serve-tools`, ...).
 */
import { spawn } from 'node:child_process';
import * as inspector from 'node:inspector';
import * as os from 'node:os';
import { Worker } from 'node:worker_threads';
import { wantsAllocatorEnv, withAllocatorEnv } from '../../contract/allocatorEnv';

/** Set on the trainer a launcher started: the file descriptor of the pipe that closes when the launcher dies. */
export const LAUNCHER_PIPE_ENV = 'ROLLOUT_STUDIO_LAUNCHER_PIPE';

/** The commands that load a model and run it: those the allocator settings are for (`env` reports them). */
const MODEL_COMMANDS = new Set(['train', 'eval', 'pretrain', 'reroll', 'chat', 'serve', 'env']);

/** The signals a launcher passes on. Others (SIGKILL aside) end the launcher, and the trainer with it. */
const RELAYED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface RelaunchContext {
  command: string | undefined;
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  /** Started with an IPC channel (by the extension). */
  hasIpc: boolean;
  /** The Node inspector is open (`--inspect`, or in NODE_OPTIONS). */
  inspecting: boolean;
}

/** Whether this CLI process should start the trainer as a second process with the allocator settings. */
export function shouldRelaunch(context: RelaunchContext): boolean {
  return (
    context.command !== undefined &&
    MODEL_COMMANDS.has(context.command) &&
    !context.hasIpc &&
    !context.inspecting &&
    wantsAllocatorEnv(context.env, context.platform)
  );
}

/** This process's context for `shouldRelaunch`. */
export function currentRelaunchContext(command: string | undefined): RelaunchContext {
  return {
    command,
    env: process.env,
    platform: process.platform,
    hasIpc: typeof process.send === 'function',
    inspecting: inspector.url() !== undefined,
  };
}

/**
 * Run this CLI again, as the trainer, with the allocator settings, and end this process the way
 * the trainer ends. Never returns to the caller's code: the launcher does nothing else.
 */
export function relaunchWithAllocatorEnv(): void {
  const trainer = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    env: { ...withAllocatorEnv(process.env), [LAUNCHER_PIPE_ENV]: '3' },
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
  });
  const relay = (signal: NodeJS.Signals) => trainer.kill(signal);
  for (const signal of RELAYED_SIGNALS) process.on(signal, relay);
  trainer.on('error', (error) => {
    process.stderr.write(`rollout-studio: could not start the trainer process (${error.message})\n`);
    process.exit(1);
  });
  trainer.on('exit', (code, signal) => {
    for (const name of RELAYED_SIGNALS) process.removeListener(name, relay);
    if (!signal) process.exit(code ?? 1);
    process.kill(process.pid, signal);
    // A signal whose default is not to end the process (none of those a trainer dies of) would leave it here.
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] ?? 0)), 1_000).unref();
  });
}

/**
 * Watches the launcher's pipe in a thread of its own: the trainer's main thread can be blocked
 * (a tool kept there with `isolation: 'trainer'` in a synchronous loop), and a watchdog on it
 * would then never run. Plain JavaScript, so it needs no loader in either build.
 */
const PIPE_WATCHDOG = `
const net = require('node:net');
const pipe = new net.Socket({ fd: require('node:worker_threads').workerData, readable: true, writable: false });
pipe.on('error', () => {});
pipe.on('close', () => process.kill(process.pid, 'SIGKILL'));
pipe.resume();
`;

/**
 * In a trainer a launcher started: end with SIGKILL when the launcher is gone (its pipe closed),
 * as a trainer without a launcher would have been killed. Does nothing in any other process.
 */
export function endWithTheLauncher(): void {
  const fd = Number(process.env[LAUNCHER_PIPE_ENV]);
  // The tools, MCP servers and workers this process starts are not a launcher's trainers.
  delete process.env[LAUNCHER_PIPE_ENV];
  if (!Number.isInteger(fd) || fd < 3) return;
  const watchdog = new Worker(PIPE_WATCHDOG, { eval: true, workerData: fd });
  watchdog.on('error', () => {});
  // The watchdog must not keep a finished trainer alive.
  watchdog.unref();
}
