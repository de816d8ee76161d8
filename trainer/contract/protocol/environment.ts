import { z } from 'zod';

/** Execution providers the trainer can run on. `auto` picks the best available one. */
export const ExecutionProviderName = z.enum(['cpu', 'webgpu', 'cuda']);
export type ExecutionProviderName = z.infer<typeof ExecutionProviderName>;

/** What a WebGPU adapter says about itself (the fields of the WebGPU `GPUAdapterInfo`). */
export const WebGpuAdapterInfo = z.object({
  vendor: z.string(),
  architecture: z.string(),
  device: z.string(),
  description: z.string(),
});
export type WebGpuAdapterInfo = z.infer<typeof WebGpuAdapterInfo>;

/** The result of trying one execution provider for real: a session created and a graph run. */
export const ProviderCheck = z.object({
  name: ExecutionProviderName,
  available: z.boolean(),
  /** When unavailable: why, in words a user can act on. */
  reason: z.string().optional(),
  /** The underlying error message, verbatim, when there was one. */
  error: z.string().optional(),
  /** Largest absolute difference between this provider's result and the expected numbers. */
  maxAbsError: z.number().optional(),
  /** Wall time of the check (session creation and one run), in milliseconds. */
  elapsedMs: z.number().nonnegative().optional(),
  /** WebGPU only: the adapter Dawn selected. */
  adapter: WebGpuAdapterInfo.optional(),
  /**
   * CUDA only: whether onnxruntime-node's CUDA provider libraries are in its bin folder (they
   * come from its install script's download, not with the npm package), where the provider
   * library is or would be, and which files are missing.
   */
  providerLibrary: z
    .object({ installed: z.boolean(), path: z.string(), missing: z.array(z.string()).optional() })
    .optional(),
  /** CUDA only: the NVIDIA kernel driver version, when a driver is loaded. */
  nvidiaDriver: z.string().optional(),
});
export type ProviderCheck = z.infer<typeof ProviderCheck>;

/** `rollout-studio env --json`: everything that decides where and how fast the trainer runs. */
export const EnvironmentReport = z.object({
  generatedAt: z.string(),
  runtime: z.object({
    node: z.string(),
    /** Set when the trainer runs inside VS Code's Electron as Node. */
    electron: z.string().optional(),
    platform: z.string(),
    arch: z.string(),
    cpuModel: z.string(),
    cpuCount: z.number().int().positive(),
    totalMemoryBytes: z.number().nonnegative(),
    freeMemoryBytes: z.number().nonnegative(),
    /** The C allocator's settings, in words (trainer/contract/allocatorEnv.ts). */
    allocator: z.string().optional(),
  }),
  onnxruntime: z.object({
    /** Absent when onnxruntime-node could not be loaded at all (see `loadError`). */
    version: z.string().optional(),
    loadError: z.string().optional(),
    /** onnxruntime's own telemetry in this process, in words (off unless the user set ORT_DISABLE_TELEMETRY). */
    telemetry: z.string().optional(),
    /** What onnxruntime-node's `listSupportedBackends()` says for this platform. */
    backends: z.array(z.object({ name: z.string(), bundled: z.boolean() })),
  }),
  providers: z.object({
    cpu: ProviderCheck,
    webgpu: ProviderCheck,
    cuda: ProviderCheck,
  }),
});
export type EnvironmentReport = z.infer<typeof EnvironmentReport>;
