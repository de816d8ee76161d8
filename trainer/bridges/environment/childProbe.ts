import { spawn } from 'node:child_process';
import { ProviderCheck, type ExecutionProviderName, parseWith } from '../../contract/protocol';
import { trainerCliInvocation } from './cliInvocation';

/** A provider check that has not answered in this long is reported as hung. */
export const PROBE_TIMEOUT_MS = 90_000;

/**
 * Run `rollout-studio env --probe <provider>` in a child process and read its one-line JSON
 * answer. A driver that aborts or hangs then costs a report line, not the trainer.
 */
export function probeInChildProcess(
  provider: ExecutionProviderName,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<ProviderCheck> {
  const started = performance.now();
  const { command, args } = trainerCliInvocation(['env', '--probe', provider]);
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const fail = (reason: string, error?: string): void =>
      resolve({
        name: provider,
        available: false,
        reason,
        ...(error ? { error } : {}),
        elapsedMs: performance.now() - started,
      });
    child.on('error', (error) => {
      clearTimeout(timer);
      fail(`The ${provider} check could not start a process: ${error.message}`);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lastLine = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && lastLine) {
        try {
          resolve(parseWith(ProviderCheck, JSON.parse(lastLine), `${provider} check answer`));
          return;
        } catch (error) {
          fail(`The ${provider} check answered something unreadable: ${(error as Error).message}`);
          return;
        }
      }
      const tail = stderr
        .trim()
        .split('\n')
        .filter((l) => !/artificially reduced/.test(l))
        .slice(-6)
        .join('\n');
      if (signal === 'SIGKILL')
        fail(
          `The ${provider} check did not finish within ${timeoutMs / 1000} s; the driver seems to hang.`,
          tail || undefined,
        );
      else if (signal)
        fail(
          `The ${provider} provider crashed the process (${signal}) while creating a session or running the check graph.`,
          tail || undefined,
        );
      else fail(`The ${provider} check exited with code ${code}.`, tail || undefined);
    });
  });
}
