import * as path from 'node:path';
import { isMainThread } from 'node:worker_threads';

export type OnnxRuntime = typeof import('onnxruntime-node');

export interface LoadedOnnxRuntime {
  ort: OnnxRuntime;
  version: string;
  /** The folder of the installed onnxruntime-node package. */
  packageDir: string;
}

/** onnxruntime's switch for its own telemetry on Linux and macOS ("1": none). */
const ORT_TELEMETRY_ENV = 'ORT_DISABLE_TELEMETRY';

/**
 * Turns onnxruntime's telemetry off in this process, unless the user set ORT_DISABLE_TELEMETRY.
 *
 * Since 1.29 the official Linux and macOS builds, which onnxruntime-node ships, include
 * Microsoft's 1DS telemetry, on by default (microsoft/onnxruntime#27379). Measured with 1.30 here:
 * a process that creates a session writes a device id and an event queue to
 * ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, queued for upload. The events name the graphs
 * (`policy_update`, `generate_full_constrained`, ...) and the producer (`rollout-studio`), and give
 * the CPU, the memory, the OS, the run times and page faults. A user who trains a model on their
 * own machine has not agreed to that, and VS Code's own telemetry setting does not reach it. So it
 * is off unless the user says otherwise: any value of theirs is kept (`0` turns it on). (On
 * Windows onnxruntime logs through ETW, Windows' diagnostic data, which the variable does not
 * govern and Windows' own settings do.)
 *
 * onnxruntime reads the variable with getenv when it first starts, once per process. So this must
 * run on the main thread (a worker's process.env is its own copy, not the process's environment)
 * and before onnxruntime loads: loadOnnxRuntime calls it, and so does the device before it starts
 * its worker.
 */
export function optOutOfOnnxRuntimeTelemetry(env: NodeJS.ProcessEnv = process.env): void {
  if (env[ORT_TELEMETRY_ENV] === undefined) env[ORT_TELEMETRY_ENV] = '1';
}

/** In words, for `rollout-studio env`: whether onnxruntime's telemetry is on in this process. */
export function describeOnnxRuntimeTelemetry(env: NodeJS.ProcessEnv = process.env): string {
  const value = env[ORT_TELEMETRY_ENV];
  if (value === undefined) return `on (${ORT_TELEMETRY_ENV} is not set)`;
  return value === '1' ? `off (${ORT_TELEMETRY_ENV}=1)` : `your setting: ${ORT_TELEMETRY_ENV}=${value}`;
}

/**
 * Load onnxruntime-node lazily, so that a missing or broken native binary becomes a report
 * entry instead of a crash at start-up. Its telemetry is turned off first (see above).
 */
export function loadOnnxRuntime(): LoadedOnnxRuntime | { error: string } {
  if (isMainThread) optOutOfOnnxRuntimeTelemetry();
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const ort = require('onnxruntime-node') as OnnxRuntime;
    const packageDir = path.dirname(require.resolve('onnxruntime-node/package.json'));
    return { ort, version: ort.env.versions.node ?? 'unknown', packageDir };
  } catch (error) {
    return {
      error:
        `onnxruntime-node could not be loaded: ${(error as Error).message}. ` +
        'Reinstall the dependencies (npm install); onnxruntime-node ships binaries for linux x64/arm64, win32 x64/arm64 and darwin arm64.',
    };
  }
}

/** Where onnxruntime-node keeps its native libraries for this platform. */
export function nativeBinaryDir(packageDir: string): string {
  return path.join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
}
