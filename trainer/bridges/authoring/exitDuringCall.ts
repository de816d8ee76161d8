import type { ToolRunReport } from '../../contract/protocol/authoring';
import type { Tool } from '../../foundations/tools/tool';
import { toolInfo } from './runTool';

/**
 * A tool that runs on run-tool's own thread (`isolation: 'trainer'`, or Debug Tool) and calls
 * `process.exit` ends the command there and then: with `process.exit(0)` it ended with exit 0
 * and no output, read by a script as a call that succeeded (issue 36, item 7). In a rollout the
 * same call ends the training process and the run is marked failed with the reason
 * (unexpectedExit.ts); here the call is reported failed — kind `threw`, as when a tool's worker
 * exits — and the process still exits, with 1. The tool's code is not changed: `process.exit`
 * still ends the process, so what the tool does next is what it would do in a run.
 */

/** What run-tool writes of a call the process ended in: synchronously, as nothing asynchronous runs after process.exit. */
export type WriteEndedCall = (report: ToolRunReport) => void;

/** The first stack frame outside Node's own, above `below`: where the tool called `process.exit`. */
function callerFrame(below: (...args: never[]) => unknown): string | undefined {
  // By function, not by file name: in the bundle this file's frames name dist/trainer/cli.js.
  const holder: { stack?: string } = {};
  Error.captureStackTrace(holder, below);
  return holder.stack
    ?.split('\n')
    .slice(1)
    .map((line) => line.trim())
    .find((line) => line.startsWith('at ') && !line.includes('node:internal') && !/\(node:/.test(line));
}

/** The calls in flight on this thread (a Debug Tool session may overlap two), and the process.exit they replaced. */
interface CallInFlight {
  tool: Tool;
  args: unknown;
  started: number;
  write: WriteEndedCall;
}
const inFlight = new Set<CallInFlight>();
let originalExit: typeof process.exit | undefined;

function reportAndExit(code?: number | string | null): never {
  const exit = originalExit ?? process.exit;
  process.exit = exit;
  const where = callerFrame(reportAndExit);
  // One report, of the oldest call in flight: the process ends once, whichever tool called it.
  const [call] = inFlight;
  try {
    if (call) {
      const { tool } = call;
      const message =
        `${tool.name} called process.exit(${code ?? ''})${where ? ` ${where}` : ''} while its call ran on run-tool's own thread ` +
        `(${tool.isolation === 'trainer' ? "isolation: 'trainer'" : 'Debug Tool'}): the call did not finish. In a rollout this ends the training ` +
        `process and fails the run; with isolation: 'worker' (the default) it would fail only the call.`;
      call.write({
        tool: toolInfo(tool),
        arguments: call.args,
        error: { kind: 'threw', message },
        latencyMs: performance.now() - call.started,
        logs: [],
      });
    }
  } finally {
    exit.call(process, 1);
  }
  throw new Error('unreachable: process.exit returned');
}

/**
 * Runs `call` (one call of `tool` on this thread) with `process.exit` watched: called before the
 * call settles, it writes the failed call's report with `write` and exits with code 1.
 */
export async function watchExitDuringCall<T>(
  tool: Tool,
  args: unknown,
  write: WriteEndedCall,
  call: () => Promise<T>,
): Promise<T> {
  const entry: CallInFlight = { tool, args, started: performance.now(), write };
  if (inFlight.size === 0) {
    originalExit = process.exit;
    process.exit = reportAndExit as typeof process.exit;
  }
  inFlight.add(entry);
  try {
    return await call();
  } finally {
    inFlight.delete(entry);
    if (inFlight.size === 0 && originalExit) {
      if (process.exit === (reportAndExit as typeof process.exit)) process.exit = originalExit;
      originalExit = undefined;
    }
  }
}
