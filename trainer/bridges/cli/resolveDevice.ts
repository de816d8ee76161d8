import { collectEnvironmentReport } from '../environment/report';
import type { ExecutionProviderName } from '../../foundations/engine/runtime/providers';
import { UsageError } from './usage';

/**
 * The execution provider for `--device`: cpu, webgpu and cuda are taken as asked (a missing one
 * fails when its first session is created, with the reason); `auto` checks the machine and picks
 * CUDA, then a hardware WebGPU adapter, then the CPU (a software WebGPU adapter such as Mesa's
 * lavapipe is slower than the CPU provider itself).
 */
export async function resolveDevice(requested: string): Promise<ExecutionProviderName> {
  if (requested === 'cpu' || requested === 'webgpu' || requested === 'cuda') return requested;
  if (requested !== 'auto') throw new UsageError(`--device: expected cpu, webgpu, cuda or auto, got "${requested}"`);
  const report = await collectEnvironmentReport();
  if (report.providers.cuda.available) return 'cuda';
  const adapter = report.providers.webgpu.adapter;
  if (
    report.providers.webgpu.available &&
    adapter &&
    adapter.architecture !== 'software' &&
    !/llvmpipe|swiftshader|lavapipe/i.test(adapter.device + adapter.description)
  )
    return 'webgpu';
  return 'cpu';
}
