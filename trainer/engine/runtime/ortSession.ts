import * as os from 'node:os';
import type * as ort from 'onnxruntime-node';
import { loadOnnxRuntime, type OnnxRuntime } from './onnxruntime';
import { explainProviderError, type ExecutionProviderName } from './providers';
import type { SerializedModel } from '../serialize';

export type { ExecutionProviderName };
export type GraphOptimization = 'disabled' | 'basic' | 'extended' | 'all';

export interface SessionSettings {
  provider: ExecutionProviderName;
  /**
   * onnxruntime's graph optimisation. 'extended'/'all' fuse x·sigmoid(x) into a float32-only
   * contrib op, so float64 graphs (gradient checks) must use 'basic'.
   */
  optimization?: GraphOptimization;
  /** Intra-op threads; default: every core this process may use. */
  threads?: number;
  /** Outputs to leave on the device (WebGPU 'gpu-buffer') instead of copying them back. */
  outputLocations?: Record<string, 'cpu' | 'gpu-buffer'>;
}

let cached: OnnxRuntime | undefined;

/** onnxruntime-node, loaded on first use; a load failure names what to do. */
export function onnxruntime(): OnnxRuntime {
  if (cached) return cached;
  const loaded = loadOnnxRuntime();
  if ('error' in loaded) throw new Error(loaded.error);
  cached = loaded.ort;
  return cached;
}

export function defaultThreads(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
}

export async function createSession(model: SerializedModel, settings: SessionSettings): Promise<ort.InferenceSession> {
  const runtime = onnxruntime();
  const options: ort.InferenceSession.SessionOptions = {
    executionProviders: [settings.provider],
    graphOptimizationLevel: settings.optimization ?? 'all',
    intraOpNumThreads: settings.threads ?? defaultThreads(),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    logSeverityLevel: 3,
    ...(settings.outputLocations ? { preferredOutputLocation: settings.outputLocations } : {}),
    // Performance work: ROLLOUT_ORT_PROFILE=/tmp/prefix writes onnxruntime's per-kernel profile of every session.
    ...(process.env.ROLLOUT_ORT_PROFILE ? { enableProfiling: true, profileFilePrefix: process.env.ROLLOUT_ORT_PROFILE } : {}),
  };
  try {
    return model.kind === 'bytes' ? await runtime.InferenceSession.create(model.bytes, options) : await runtime.InferenceSession.create(model.path, options);
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if (settings.provider === 'cpu') throw new Error(`onnxruntime could not create a CPU session: ${message}`);
    throw new ProviderUnavailableError(settings.provider, `${explainProviderError(settings.provider, message)} (onnxruntime: ${message.split('\n')[0]}) Run "rollout-studio env" for a full check.`);
  }
}

/** The requested execution provider cannot run here; the message says what is missing. */
export class ProviderUnavailableError extends Error {
  constructor(
    readonly provider: ExecutionProviderName,
    reason: string,
  ) {
    super(`The ${provider} execution provider is not available: ${reason}`);
    this.name = 'ProviderUnavailableError';
  }
}
