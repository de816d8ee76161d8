import * as fs from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { optOutOfOnnxRuntimeTelemetry } from '../runtime/onnxruntime';
import type { ExecutionProviderName } from '../runtime/ortSession';
import type { HostTensor } from '../runtime/tensors';
import type { DType } from '../dtype';
import { DeviceCore } from './core';
import type { DeviceApi, Feed, LoadRequest, OutputTarget } from './deviceApi';

export type { Feed, OutputTarget, StateRef, LoadRequest } from './deviceApi';

/**
 * Where graphs run. A Device holds sessions and named state tensors and is driven with async
 * calls; `createDevice` puts it in a worker thread (the default) or in this thread.
 */
export interface Device extends DeviceApi {
  readonly provider: ExecutionProviderName;
}

class InProcessDevice extends DeviceCore implements Device {}

/** The worker script: next to this bundle when built, the TypeScript source under tsx. */
function workerEntry(): { script: string; eval: boolean } {
  const bundled = path.join(__dirname, 'device-worker.js');
  if (__filename.endsWith('.js') && fs.existsSync(bundled)) return { script: bundled, eval: false };
  const source = path.join(__dirname, 'worker.ts');
  // Under tsx (tests, development) the worker registers tsx's CommonJS hook, then loads the source.
  return {
    script: `require(${JSON.stringify(require.resolve('tsx/cjs'))}); require(${JSON.stringify(source)});`,
    eval: true,
  };
}

class WorkerDevice implements Device {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failure: Error | undefined;

  constructor(
    readonly provider: ExecutionProviderName,
    threads?: number,
  ) {
    // On this thread: the worker's onnxruntime reads the process's environment, not its process.env.
    optOutOfOnnxRuntimeTelemetry();
    const entry = workerEntry();
    this.worker = new Worker(entry.script, { eval: entry.eval, workerData: { provider, threads } });
    this.worker.on(
      'message',
      (message: { id: number; result?: unknown; error?: { message: string; stack?: string } }) => {
        const call = this.pending.get(message.id);
        if (!call) return;
        this.pending.delete(message.id);
        if (message.error) {
          const error = new Error(message.error.message);
          error.stack = `${error.message}\n    (in the device worker)\n${message.error.stack ?? ''}`;
          call.reject(error);
        } else call.resolve(message.result);
      },
    );
    const fail = (error: Error) => {
      this.failure = error;
      for (const call of this.pending.values()) call.reject(error);
      this.pending.clear();
    };
    this.worker.on('error', (error) => fail(new Error(`the device worker failed: ${error.message}`)));
    this.worker.on('exit', (code) => fail(new Error(`the device worker exited (code ${code})`)));
  }

  private call<T>(method: keyof DeviceApi, ...args: unknown[]): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, method, args });
    });
  }

  load(request: LoadRequest): Promise<number> {
    return this.call('load', request);
  }
  run(
    session: number,
    feeds: Record<string, Feed>,
    outputs: Record<string, OutputTarget>,
  ): Promise<Record<string, HostTensor>> {
    return this.call('run', session, feeds, outputs);
  }
  setState(values: Record<string, HostTensor>): Promise<void> {
    return this.call('setState', values);
  }
  getState(names: readonly string[]): Promise<Record<string, HostTensor>> {
    return this.call('getState', names);
  }
  copyState(pairs: Record<string, string>): Promise<void> {
    return this.call('copyState', pairs);
  }
  setZeros(tensors: Record<string, { dtype: DType; shape: readonly number[] }>): Promise<void> {
    return this.call('setZeros', tensors);
  }
  deleteState(names: readonly string[]): Promise<void> {
    return this.call('deleteState', names);
  }
  stateNames(): Promise<string[]> {
    return this.call('stateNames');
  }
  stateInfo(names: readonly string[]): Promise<Record<string, { location: string; dtype: string; shape: number[] }>> {
    return this.call('stateInfo', names);
  }
  release(session: number): Promise<void> {
    return this.call('release', session);
  }
  async close(): Promise<void> {
    if (!this.failure) await this.call('close').catch(() => undefined);
    this.failure ??= new Error('the device is closed');
    await this.worker.terminate();
  }
}

export interface DeviceOptions {
  /** Run onnxruntime in a worker thread (default) so this thread never blocks on a run. */
  worker?: boolean;
  /** Intra-op threads of every session that does not set its own (default: every core). */
  threads?: number;
}

export function createDevice(provider: ExecutionProviderName, options: DeviceOptions = {}): Device {
  return options.worker === false
    ? new InProcessDevice(provider, options.threads)
    : new WorkerDevice(provider, options.threads);
}
