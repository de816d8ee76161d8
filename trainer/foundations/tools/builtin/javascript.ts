import { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { Tool } from '../tool';

/**
 * Runs a snippet of model-written JavaScript (the code tool of the ReTool-style code-block
 * format) in a fresh worker thread, in an empty `node:vm` context: plain JavaScript, with
 * `print`/`console.log` lines and the last expression's value as the observation; no
 * `require`/`import`, `process`, files, network, timers, `eval`/`new Function` or WebAssembly,
 * and nothing kept between calls. A worker, because only terminating one stops any run at its
 * deadline and keeps a crash out of the trainer's thread. NOT a security boundary (a vm context
 * can be escaped; the worker shares the process): run untrusted code in a container.
 */

export interface JavaScriptRun {
  /** Printed lines, then the last expression's value (when not undefined), capped at `maxOutputChars`. */
  output: string;
}

export interface JavaScriptRunOptions {
  timeoutMs: number;
  maxOutputChars?: number;
  /** Heap limit of the worker (default 64 MB). */
  maxHeapMb?: number;
}

export class SandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxError';
  }
}

// Defined inside the context, so nothing the user code touches belongs to the worker's realm
// (a function of that realm has that realm's Function as its constructor: a way out).
const PRELUDE = `
(() => {
  const out = [];
  let size = 0;
  const limit = __limit;
  const show = (value) => {
    if (typeof value === 'string') return value;
    if (typeof value === 'bigint') return value + 'n';
    if (typeof value === 'function') return '[function ' + (value.name || 'anonymous') + ']';
    if (value === undefined) return 'undefined';
    try {
      const json = JSON.stringify(value, (k, v) => (typeof v === 'bigint' ? v.toString() + 'n' : v));
      return json === undefined ? String(value) : json;
    } catch (e) {
      return String(value);
    }
  };
  const print = (...values) => {
    const line = values.map(show).join(' ');
    size += line.length + 1;
    if (size <= limit) out.push(line);
  };
  const render = (value) => {
    const lines = out.slice();
    if (value !== undefined) lines.push(show(value));
    let text = lines.join('\\n');
    if (size > limit || text.length > limit) text = text.slice(0, limit) + '\\n[output cut at ' + limit + ' characters]';
    return text;
  };
  const fixed = (name, value) => Object.defineProperty(globalThis, name, { value, writable: false, configurable: false, enumerable: false });
  fixed('print', print);
  fixed('console', Object.freeze({ log: print, info: print, warn: print, error: print }));
  fixed('__rollout_render', render);
  fixed('__rollout_slot', Object.seal({ value: undefined }));
})();
`;

// The worker: builds the context, runs the code, lets its promise jobs run, reports back.
const WORKER = `
const vm = require('node:vm');
const { parentPort, workerData } = require('node:worker_threads');
const { code, prelude, timeoutMs } = workerData;
const fail = (error) => {
  let message;
  try {
    const name = typeof error?.name === 'string' ? error.name : 'Error';
    const text = typeof error?.message === 'string' ? error.message : String(error);
    const line = /code\\.js:(\\d+)/.exec(typeof error?.stack === 'string' ? error.stack : '')?.[1];
    message = name + ': ' + text + (line ? ' (line ' + line + ')' : '');
  } catch {
    message = 'the code threw a value that cannot be shown';
  }
  if (error?.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') message = 'timeout';
  parentPort.postMessage({ ok: false, message });
  process.exit(0);
};
process.on('unhandledRejection', fail);
process.on('uncaughtException', fail);
const context = vm.createContext(Object.create(null), { name: 'rollout-studio sandbox', codeGeneration: { strings: false, wasm: false } });
vm.runInContext(prelude, context);
const timed = { timeout: timeoutMs, breakOnSigint: false };
try {
  const completion = new vm.Script(code, { filename: 'code.js' }).runInContext(context, timed);
  context.__rollout_slot.value = completion;
} catch (error) {
  fail(error);
}
// Promise jobs the code queued run now; the parent's deadline stops them if they never end.
setImmediate(() => {
  try {
    const text = vm.runInContext('__rollout_render(__rollout_slot.value)', context, timed);
    parentPort.postMessage({ ok: true, output: typeof text === 'string' ? text : '' });
  } catch (error) {
    fail(error);
  }
});
`;

const STARTUP_LIMIT_MS = 15_000;

/** Runs `code` in a fresh sandbox; rejects with a SandboxError (syntax error, thrown value, timeout, crash) carrying the script's own message. */
export function runJavaScript(code: string, options: JavaScriptRunOptions): Promise<JavaScriptRun> {
  const limit = options.maxOutputChars ?? 8000;
  const heap = options.maxHeapMb ?? 64;
  const timedOut = `the code ran longer than ${options.timeoutMs} ms and was stopped`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { code, prelude: PRELUDE.replace('__limit', String(limit)), timeoutMs: options.timeoutMs },
      resourceLimits: { maxOldGenerationSizeMb: heap, maxYoungGenerationSizeMb: Math.max(4, heap / 8), stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      outcome();
    };
    // Covers what the vm timeout cannot (endless promise jobs). Counted from the worker's start,
    // because starting a thread can take long on a busy machine; the start itself gets its own limit.
    let timer = setTimeout(
      () => settle(() => reject(new SandboxError(`the sandbox did not start within ${STARTUP_LIMIT_MS} ms`))),
      STARTUP_LIMIT_MS,
    );
    worker.once('online', () => {
      clearTimeout(timer);
      timer = setTimeout(() => settle(() => reject(new SandboxError(timedOut))), options.timeoutMs + 250);
    });
    worker.on('message', (message: { ok: boolean; output?: string; message?: string }) =>
      settle(() =>
        message.ok
          ? resolve({ output: message.output ?? '' })
          : reject(new SandboxError(message.message === 'timeout' ? timedOut : (message.message ?? 'the code failed'))),
      ),
    );
    worker.on('error', (error) =>
      settle(() =>
        reject(
          new SandboxError(
            (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? `the code ran out of memory (limit ${heap} MB)`
              : `the sandbox failed: ${error.message}`,
          ),
        ),
      ),
    );
    worker.on('exit', (exitCode) =>
      settle(() => reject(new SandboxError(`the sandbox stopped (exit code ${exitCode}) before the code finished`))),
    );
  });
}

const JavaScriptArgs = z.object({
  code: z.string().describe('JavaScript to run; print(...) shows values, and the last expression is shown too.'),
});

export interface JavaScriptToolOptions {
  name?: string;
  description?: string;
  /** Time limit of one run (default 2000 ms). */
  timeoutMs?: number;
  maxOutputChars?: number;
}

export class JavaScriptTool extends Tool<typeof JavaScriptArgs> {
  readonly name: string;
  readonly description: string;
  readonly parameters = JavaScriptArgs;
  private readonly runTimeoutMs: number;
  private readonly maxOutputChars: number;

  constructor(options: JavaScriptToolOptions = {}) {
    super();
    this.name = options.name ?? 'run_javascript';
    this.description =
      options.description ?? 'Run JavaScript code and return what it prints and the value of its last expression.';
    this.runTimeoutMs = options.timeoutMs ?? 2000;
    this.maxOutputChars = options.maxOutputChars ?? 8000;
    // The sandbox stops the code itself; the runner's deadline is only a backstop.
    this.timeoutMs = this.runTimeoutMs + 2000;
  }

  async execute({ code }: z.output<typeof JavaScriptArgs>): Promise<string> {
    const { output } = await runJavaScript(code, { timeoutMs: this.runTimeoutMs, maxOutputChars: this.maxOutputChars });
    return output === '' ? '(no output)' : output;
  }
}
