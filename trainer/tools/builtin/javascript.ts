import * as vm from 'node:vm';
import { z } from 'zod';
import { Tool } from '../tool';

/**
 * Runs a snippet of model-written JavaScript in a fresh `node:vm` context — the code tool of
 * the ReTool-style code-block format.
 *
 * What it can do: plain JavaScript (statements, functions, loops, Math, JSON, BigInt, Array,
 * Map, Set, Date, RegExp); `print(...)` / `console.log(...)` lines and the value of the last
 * expression come back as the observation.
 *
 * What it cannot do: `require`/`import`, `process`, the file system, the network, timers
 * (`setTimeout` and friends do not exist, so top-level `await` has nothing to wait for), `eval` or
 * `new Function` (code generation from strings is disabled), WebAssembly. Each run gets a new
 * context; nothing survives between calls. A run is stopped after `timeoutMs` (promise jobs
 * included: microtasks run inside the timed evaluation).
 *
 * It is NOT a security boundary: `node:vm` does not isolate memory or CPU of the process, and a
 * determined adversary can escape a vm context. It protects a training run from accidents of a
 * model's code (infinite loops, a thrown error, huge output), not from malice. Huge allocations
 * can still exhaust the trainer's heap. Run untrusted code in a separate process or container.
 */

export interface JavaScriptRun {
  /** Printed lines, then the last expression's value (when not undefined), capped at `maxOutputChars`. */
  output: string;
}

export class SandboxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxError';
  }
}

// Defined inside the context, so nothing the user code touches belongs to the host realm
// (a host function's `.constructor` would be the host's Function: a way out of the context).
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
  const render = (hasValue, value) => {
    const lines = out.slice();
    if (hasValue && value !== undefined) lines.push(show(value));
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

/** Evaluates `code` as a script; throws SandboxError (syntax error, thrown value, timeout) with the script's own message. */
export function runJavaScript(code: string, options: { timeoutMs: number; maxOutputChars?: number }): JavaScriptRun {
  const context = vm.createContext(Object.create(null), {
    name: 'rollout-studio sandbox',
    codeGeneration: { strings: false, wasm: false },
    microtaskMode: 'afterEvaluate',
  });
  const limit = options.maxOutputChars ?? 8000;
  vm.runInContext(PRELUDE.replace('__limit', String(limit)), context);
  const timed = { timeout: options.timeoutMs, breakOnSigint: false };
  let completion: unknown;
  try {
    completion = new vm.Script(code, { filename: 'code.js' }).runInContext(context, timed);
    // The value stays a context object; it is rendered inside the context, under the same timeout.
    (context['__rollout_slot'] as { value: unknown }).value = completion;
    const text = vm.runInContext('__rollout_render(true, __rollout_slot.value)', context, timed);
    return { output: typeof text === 'string' ? text : '' };
  } catch (error) {
    throw new SandboxError(sandboxMessage(error, options.timeoutMs));
  }
}

function sandboxMessage(error: unknown, timeoutMs: number): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return `the code ran longer than ${timeoutMs} ms and was stopped`;
  // Errors from inside the context are not host `Error`s; read name and message defensively.
  try {
    const e = error as { name?: unknown; message?: unknown; stack?: unknown };
    const name = typeof e?.name === 'string' ? e.name : 'Error';
    const message = typeof e?.message === 'string' ? e.message : String(error);
    const stack = typeof e?.stack === 'string' ? e.stack : '';
    const line = /code\.js:(\d+)/.exec(stack)?.[1];
    return `${name}: ${message}${line ? ` (line ${line})` : ''}`;
  } catch {
    return 'the code threw a value that cannot be shown';
  }
}

const JavaScriptArgs = z.object({ code: z.string().describe('JavaScript to run; print(...) shows values, and the last expression is shown too.') });

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
    this.description = options.description ?? 'Run JavaScript code and return what it prints and the value of its last expression.';
    this.runTimeoutMs = options.timeoutMs ?? 2000;
    this.maxOutputChars = options.maxOutputChars ?? 8000;
    // The vm timeout stops the code; the runner's deadline is only a backstop.
    this.timeoutMs = this.runTimeoutMs + 1000;
  }

  execute({ code }: z.output<typeof JavaScriptArgs>): string {
    const { output } = runJavaScript(code, { timeoutMs: this.runTimeoutMs, maxOutputChars: this.maxOutputChars });
    return output === '' ? '(no output)' : output;
  }
}
