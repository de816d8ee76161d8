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
  optimization?: GraphOptimization | undefined;
  /** Intra-op threads; default: every core this process may use. */
  threads?: number | undefined;
  /**
   * onnxruntime's CPU memory arena (default on). The arena keeps every block a run took for the
   * session's life, one arena per session: right for graphs run many times with small tensors
   * (generation), wasteful for the large training and scoring graphs (test/bench/README.md, bench:step).
   */
  memoryArena?: boolean | undefined;
  /** Outputs to leave on the device (WebGPU 'gpu-buffer') instead of copying them back. */
  outputLocations?: Record<string, 'cpu' | 'gpu-buffer'> | undefined;
}

let cached: OnnxRuntime | undefined;
/** Sessions created with profiling on: their profile is written when they are released. */
const profiled = new WeakSet<ort.InferenceSession>();

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

/**
 * `externalData`: initializers' data held in memory (see device/frozenInputs.ts), by the file name
 * the model gives them; onnxruntime reads them from there instead of from a file.
 */
export async function createSession(
  model: SerializedModel,
  settings: SessionSettings,
  externalData: readonly { path: string; data: Uint8Array }[] = [],
): Promise<ort.InferenceSession> {
  const runtime = onnxruntime();
  const options: ort.InferenceSession.SessionOptions = {
    executionProviders: [settings.provider],
    graphOptimizationLevel: settings.optimization ?? 'all',
    intraOpNumThreads: settings.threads ?? defaultThreads(),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    // Memory patterns pre-plan one block per set of input shapes and keep every plan; our shapes
    // change with every batch and decoding step, so they only hold memory. Off, a Qwen2.5-0.5B-shaped
    // LoRA update (micro-batches of 2 × ~300 tokens) peaked at 5.4 GB instead of 7.4, at the same speed.
    enableMemPattern: false,
    enableCpuMemArena: settings.memoryArena ?? true,
    logSeverityLevel: 3,
    ...(settings.outputLocations ? { preferredOutputLocation: settings.outputLocations } : {}),
    // The binding takes a Buffer (a view of the same memory, not a copy).
    ...(externalData.length
      ? {
          externalData: externalData.map(({ path, data }) => ({
            path,
            data: Buffer.from(data.buffer, data.byteOffset, data.byteLength),
          })),
        }
      : {}),
    // Performance work: ROLLOUT_ORT_PROFILE=/tmp/prefix writes onnxruntime's per-kernel profile of every session.
    ...(process.env.ROLLOUT_ORT_PROFILE
      ? { enableProfiling: true, profileFilePrefix: process.env.ROLLOUT_ORT_PROFILE }
      : {}),
  };
  try {
    const session =
      model.kind === 'bytes'
        ? await runtime.InferenceSession.create(model.bytes, options)
        : await runtime.InferenceSession.create(model.path, options);
    if (options.enableProfiling) profiled.add(session);
    return session;
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    if (settings.provider === 'cpu')
      throw new Error(`onnxruntime could not create a CPU session: ${message}`, { cause: error });
    throw new ProviderUnavailableError(
      settings.provider,
      `${explainProviderError(settings.provider, message)} (onnxruntime: ${message.split('\n')[0]}) Run "rollout-studio env" for a full check.`,
    );
  }
}

/** Release a session; a profiled one first writes its profile (onnxruntime-node's release alone leaves the file empty). */
export async function releaseSession(session: ort.InferenceSession): Promise<void> {
  if (profiled.has(session)) session.endProfiling();
  await session.release();
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
