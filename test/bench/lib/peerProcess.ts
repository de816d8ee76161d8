/**
 * A benchmark peer kept alive for the whole benchmark (so its start-up — Python importing torch,
 * llama.cpp loading a model — is never timed) and driven by requests: one JSON object per line
 * on its stdin, one JSON reply per line on its stdout (`{"error": …}` when a request failed).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as readline from 'node:readline';
import { withoutAllocatorEnv } from '../../../trainer/contract/allocatorEnv';

export const PYTHON = process.env.BENCH_PYTHON ?? '/usr/bin/python3';
/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times (100 on every mainstream kernel build). */
const CLOCK_TICKS = 100;

export class PeerProcess {
  private readonly replies: Array<(line: string) => void> = [];
  private stderr = '';
  private exited: string | undefined;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcessWithoutNullStreams,
  ) {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const reply = this.replies.shift();
      if (reply) reply(line);
      else process.stderr.write(`[${name}] ${line}\n`);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-20_000);
    });
    child.on('exit', (code, signal) => {
      this.exited = `exited (${signal ?? `code ${code}`})`;
      for (const reply of this.replies.splice(0))
        reply(JSON.stringify({ error: `${name} ${this.exited}\n${this.stderr}` }));
    });
  }

  static start(name: string, command: string, args: string[], env: Record<string, string> = {}): PeerProcess {
    if (command === PYTHON && !fs.existsSync(PYTHON)) {
      throw new Error(
        `${PYTHON} not found: install Debian's python3-torch and libopenblas0-pthread (apt-get install python3-torch libopenblas0-pthread), or set BENCH_PYTHON`,
      );
    }
    // A peer runs with its own settings: not with the allocator settings our trainer gets.
    const child = spawn(command, args, {
      env: { ...withoutAllocatorEnv(process.env), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return new PeerProcess(name, child);
  }

  request<T = Record<string, unknown>>(message: Record<string, unknown>): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.name} ${this.exited}\n${this.stderr}`));
    return new Promise<T>((resolve, reject) => {
      this.replies.push((line) => {
        let reply: Record<string, unknown>;
        try {
          reply = JSON.parse(line);
        } catch {
          reject(new Error(`${this.name} answered with something that is not JSON: ${line.slice(0, 200)}`));
          return;
        }
        if (typeof reply.error === 'string')
          reject(new Error(`${this.name} failed on ${JSON.stringify(message).slice(0, 200)}:\n${reply.error}`));
        else resolve(reply as T);
      });
      this.child.stdin.write(JSON.stringify(message) + '\n');
    });
  }

  /** The peer's process id (its /proc entries: faults, memory). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** CPU seconds the peer process has used so far (every thread), from /proc/<pid>/stat. */
  cpuSeconds(): number {
    const stat = fs.readFileSync(`/proc/${this.child.pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th fields.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  }

  /** The peer's peak resident memory, from /proc (kB → bytes), while it is alive. */
  peakMemoryBytes(): number | undefined {
    try {
      const status = fs.readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const done = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await done;
    clearTimeout(timer);
  }
}

/** This process's peak resident memory (VmHWM). */
export function ownPeakMemoryBytes(): number {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}
