import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ExecutionProviderName, ProviderCheck, WebGpuAdapterInfo } from '../../contract/protocol';
import { CHECK_COLS, CHECK_INNER, CHECK_ROWS, checkGraphBytes, checkInputs, expectedCheckOutput } from './checkGraph';
import type { OnnxRuntime } from '../../foundations/engine/runtime/onnxruntime';
import { explainProviderError } from '../../foundations/engine/runtime/providers';

export { explainProviderError };

/** Float32 results of the check graph must match the float64 reference this closely. */
export const CHECK_TOLERANCE = 1e-4;

const ORT_PROVIDER_ID: Record<ExecutionProviderName, string> = {
  cpu: 'CPUExecutionProvider',
  webgpu: 'WebGpuExecutionProvider',
  cuda: 'CUDAExecutionProvider',
};

/**
 * Create a session on `provider`, run the check graph, and compare with the reference.
 * Runs in the calling process: a provider whose native code aborts takes the process with
 * it, which is why non-CPU providers are checked through `probeInChildProcess`.
 */
export async function runProviderCheck(ort: OnnxRuntime, provider: ExecutionProviderName): Promise<ProviderCheck> {
  const started = performance.now();
  const inputs = checkInputs();
  const expected = expectedCheckOutput(inputs);
  const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-studio-env-'));
  try {
    const session = await ort.InferenceSession.create(checkGraphBytes(), {
      executionProviders: [provider],
      logSeverityLevel: 3,
      // The profile tells which provider really ran each node: onnxruntime silently falls
      // back to the CPU for nodes a provider has no kernel for.
      enableProfiling: true,
      profileFilePrefix: path.join(profileDir, 'check'),
    });
    const result = await session.run({
      x: new ort.Tensor('float32', inputs.x, [CHECK_ROWS, CHECK_INNER]),
      w: new ort.Tensor('float32', inputs.w, [CHECK_INNER, CHECK_COLS]),
      b: new ort.Tensor('float32', inputs.b, [CHECK_COLS]),
    });
    const y = (await result.y.getData()) as Float32Array;
    session.endProfiling();
    await session.release();
    let maxAbsError = 0;
    for (let i = 0; i < expected.length; i++) maxAbsError = Math.max(maxAbsError, Math.abs(y[i] - expected[i]));
    if (!(maxAbsError <= CHECK_TOLERANCE)) {
      return {
        name: provider,
        available: false,
        reason: `The ${provider} provider ran the check graph but returned wrong numbers (largest error ${maxAbsError.toExponential(2)}, allowed ${CHECK_TOLERANCE}). Its driver is not usable for training; update the driver or pick another device.`,
        maxAbsError,
        elapsedMs: performance.now() - started,
      };
    }
    const placement = kernelPlacement(profileDir, ORT_PROVIDER_ID[provider]);
    if (placement.elsewhere > 0 || placement.onProvider === 0) {
      return {
        name: provider,
        available: false,
        reason: `onnxruntime ran ${placement.elsewhere} of ${placement.elsewhere + placement.onProvider} check kernels on another provider instead of ${provider}: it has no ${provider} kernel for them.`,
        maxAbsError,
        elapsedMs: performance.now() - started,
      };
    }
    return { name: provider, available: true, maxAbsError, elapsedMs: performance.now() - started };
  } catch (error) {
    const message = (error as Error).message ?? String(error);
    return {
      name: provider,
      available: false,
      reason: explainProviderError(provider, message),
      error: message,
      elapsedMs: performance.now() - started,
    };
  } finally {
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
}

/**
 * Count the kernel runs in an onnxruntime profile done by `providerId` and by anything else
 * (graph optimisation may fuse the check graph's nodes, so the total varies).
 */
function kernelPlacement(profileDir: string, providerId: string): { onProvider: number; elsewhere: number } {
  const file = fs.readdirSync(profileDir).find((f) => f.endsWith('.json'));
  if (!file) throw new Error(`onnxruntime wrote no profile into ${profileDir}`);
  const events = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8')) as Array<{
    cat?: string;
    args?: { provider?: string };
  }>;
  const kernels = events.filter((e) => e.cat === 'Node' && e.args?.provider);
  const onProvider = kernels.filter((e) => e.args!.provider === providerId).length;
  return { onProvider, elsewhere: kernels.length - onProvider };
}

/**
 * Ask Dawn which adapter it picks with the options onnxruntime's WebGPU provider uses
 * (high-performance preference, the platform's default backend). Uses the `webgpu` package,
 * Dawn's own Node binding, in the same probe process that ran the session.
 */
export async function describeWebGpuAdapter(): Promise<WebGpuAdapterInfo | { error: string }> {
  try {
    const dawn = (await import('webgpu')) as {
      create: (flags: string[]) => {
        requestAdapter(options?: { powerPreference?: string }): Promise<{ info: WebGpuAdapterInfo } | null>;
      };
    };
    const gpu = dawn.create([]);
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return { error: 'Dawn found no adapter' };
    const { vendor, architecture, device, description } = adapter.info;
    return { vendor, architecture, device, description };
  } catch (error) {
    return { error: `could not describe the adapter: ${(error as Error).message}` };
  }
}
