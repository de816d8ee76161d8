/**
 * The `rollout-studio` CLI from its TypeScript sources, as a child process a test can watch:
 * when it printed its error, when it exited and how, what it wrote — so a test can say "the
 * process ended within seconds of its message", not only "it ended".
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Readable } from 'node:stream';

const ROOT = path.resolve(__dirname, '../..');
const TSX = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
const CLI = path.join(ROOT, 'trainer/bridges/cli/main.ts');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Milliseconds from start to the first `rollout-studio:` line on stderr (the error), if any. */
  messageAtMs?: number;
  /** Milliseconds from start to exit. */
  exitAtMs: number;
}

export interface CliProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

export function startCli(args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): CliProcess {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let messageAtMs: number | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    if (messageAtMs === undefined && /(^|\n)rollout-studio: /.test(stderr)) messageAtMs = performance.now() - started;
  });
  const done = new Promise<CliResult>((resolve) =>
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout,
        stderr,
        ...(messageAtMs !== undefined ? { messageAtMs } : {}),
        exitAtMs: performance.now() - started,
      }),
    ),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, done };
}

/** Run the CLI to its end; a process still running after `timeoutMs` is killed (and the test will say so). */
export async function runCli(
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CliResult> {
  const cli = startCli(args, options);
  const timer = setTimeout(() => cli.child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  try {
    return await cli.done;
  } finally {
    clearTimeout(timer);
  }
}
