import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describeAllocatorEnv } from '../../contract/allocatorEnv';
import type { EnvironmentReport, ProviderCheck } from '../../contract/protocol';
import { probeInChildProcess } from './childProbe';
import {
  describeOnnxRuntimeTelemetry,
  loadOnnxRuntime,
  nativeBinaryDir,
} from '../../foundations/engine/runtime/onnxruntime';
import { runProviderCheck } from './providerCheck';

/** What decides where and how fast training can run on this machine, checked for real. */
export async function collectEnvironmentReport(): Promise<EnvironmentReport> {
  const cpus = os.cpus();
  const runtime: EnvironmentReport['runtime'] = {
    node: process.versions.node,
    ...(process.versions.electron ? { electron: process.versions.electron } : {}),
    platform: process.platform,
    arch: process.arch,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    cpuCount: typeof os.availableParallelism === 'function' ? os.availableParallelism() : Math.max(1, cpus.length),
    totalMemoryBytes: os.totalmem(),
    freeMemoryBytes: os.freemem(),
    allocator: describeAllocatorEnv(process.env),
  };
  const loaded = loadOnnxRuntime();
  if ('error' in loaded) {
    const unavailable = (name: ProviderCheck['name']): ProviderCheck => ({
      name,
      available: false,
      reason: loaded.error,
    });
    return {
      generatedAt: new Date().toISOString(),
      runtime,
      onnxruntime: { loadError: loaded.error, telemetry: describeOnnxRuntimeTelemetry(), backends: [] },
      providers: { cpu: unavailable('cpu'), webgpu: unavailable('webgpu'), cuda: unavailable('cuda') },
    };
  }
  const backends = loaded.ort.listSupportedBackends().map(({ name, bundled }) => ({ name, bundled }));
  const cpu = await runProviderCheck(loaded.ort, 'cpu');
  const [webgpu, cuda] = await Promise.all([checkWebGpu(backends), checkCuda(loaded.packageDir, backends)]);
  return {
    generatedAt: new Date().toISOString(),
    runtime,
    onnxruntime: { version: loaded.version, telemetry: describeOnnxRuntimeTelemetry(), backends },
    providers: { cpu, webgpu, cuda },
  };
}

type Backends = Array<{ name: string; bundled: boolean }>;

async function checkWebGpu(backends: Backends): Promise<ProviderCheck> {
  if (!backends.some((b) => b.name === 'webgpu')) {
    return {
      name: 'webgpu',
      available: false,
      reason: `onnxruntime-node has no WebGPU provider for ${process.platform}-${process.arch}; it ships one for Linux x64, Windows and macOS arm64.`,
    };
  }
  return probeInChildProcess('webgpu');
}

async function checkCuda(packageDir: string, backends: Backends): Promise<ProviderCheck> {
  const nvidiaDriver = readNvidiaDriverVersion();
  const driver = nvidiaDriver ? { nvidiaDriver } : {};
  if (!backends.some((b) => b.name === 'cuda') || process.platform !== 'linux' || process.arch !== 'x64') {
    return { name: 'cuda', available: false, reason: 'onnxruntime-node provides CUDA on Linux x64 only.', ...driver };
  }
  const binDir = nativeBinaryDir(packageDir);
  const missing = CUDA_PROVIDER_FILES.filter((file) => !fs.existsSync(path.join(binDir, file)));
  const providerLibrary = {
    installed: missing.length === 0,
    path: path.join(binDir, CUDA_PROVIDER_FILES[0]),
    ...(missing.length ? { missing } : {}),
  };
  if (!providerLibrary.installed) {
    return {
      name: 'cuda',
      available: false,
      reason:
        `onnxruntime-node's CUDA provider is not installed here: ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not in ${binDir}. ` +
        'onnxruntime-node downloads it from NuGet in its install script, which was skipped (ONNXRUNTIME_NODE_INSTALL=skip, or an allowScripts entry) or could not reach the network. ' +
        `With CUDA 12 and cuDNN 9, download it now: ${cudaInstallCommand(packageDir)}` +
        (nvidiaDriver ? '' : ' (no NVIDIA driver is loaded on this machine, though)'),
      providerLibrary,
      ...driver,
    };
  }
  return { ...(await probeInChildProcess('cuda')), providerLibrary, ...driver };
}

/** What onnxruntime-node's install script puts in its bin folder for CUDA on Linux x64; the provider needs both. */
const CUDA_PROVIDER_FILES = ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'];

/** The command that runs onnxruntime-node's install script for the CUDA 12 provider, for the copy installed at `packageDir`. */
export function cudaInstallCommand(packageDir: string): string {
  return `ONNXRUNTIME_NODE_INSTALL=cuda12 node ${path.join(packageDir, 'script', 'install.js')}`;
}

/** The loaded NVIDIA kernel driver's version, from /proc; undefined when none is loaded. */
function readNvidiaDriverVersion(): string | undefined {
  try {
    const text = fs.readFileSync('/proc/driver/nvidia/version', 'utf8');
    return /Kernel Module\s+(?:for \S+\s+)?([\d.]+)/.exec(text)?.[1] ?? text.split('\n')[0].trim();
  } catch {
    return undefined;
  }
}

/** The report as text for a terminal. */
export function formatEnvironmentReport(report: EnvironmentReport): string {
  const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  const r = report.runtime;
  const lines = [
    'Rollout Studio environment',
    '',
    `Runtime        Node ${r.node}${r.electron ? ` (Electron ${r.electron})` : ''} on ${r.platform}-${r.arch}`,
    `CPU            ${r.cpuModel}, ${r.cpuCount} cores`,
    `Memory         ${gib(r.totalMemoryBytes)} total, ${gib(r.freeMemoryBytes)} free`,
    ...(r.allocator ? [`Allocator      ${r.allocator}`] : []),
    `onnxruntime    ${report.onnxruntime.version ? `onnxruntime-node ${report.onnxruntime.version}` : `not loaded: ${report.onnxruntime.loadError}`}`,
    ...(report.onnxruntime.telemetry ? [`Telemetry      onnxruntime's: ${report.onnxruntime.telemetry}`] : []),
    '',
    'Execution providers',
  ];
  for (const check of [report.providers.cpu, report.providers.webgpu, report.providers.cuda]) {
    const mark = check.available ? 'available' : 'unavailable';
    const timing = check.elapsedMs !== undefined ? ` (checked in ${Math.round(check.elapsedMs)} ms)` : '';
    lines.push(`  ${check.name.padEnd(8)} ${mark}${check.available ? timing : ''}`);
    if (check.adapter)
      lines.push(
        `           adapter: ${check.adapter.vendor} / ${check.adapter.architecture} / ${check.adapter.device}${check.adapter.description ? ` — ${check.adapter.description}` : ''}`,
      );
    if (check.nvidiaDriver) lines.push(`           NVIDIA driver: ${check.nvidiaDriver}`);
    if (check.providerLibrary) {
      const library = check.providerLibrary;
      lines.push(
        `           provider library: ${library.installed ? `installed (${library.path})` : `not installed (missing: ${(library.missing ?? [path.basename(library.path)]).join(', ')})`}`,
      );
    }
    if (!check.available && check.reason) lines.push(`           why: ${check.reason}`);
    if (!check.available && check.error)
      lines.push(
        ...check.error
          .split('\n')
          .slice(0, 4)
          .map((l) => `           error: ${l}`),
      );
  }
  return lines.join('\n');
}
