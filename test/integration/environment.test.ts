import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { loadOnnxRuntime } from '#trainer/foundations/engine/runtime/onnxruntime';
import { EnvironmentReport, parseWith } from '#trainer/contract/protocol';
import {
  CHECK_COLS,
  CHECK_INNER,
  CHECK_ROWS,
  checkGraphBytes,
  checkInputs,
} from '#trainer/bridges/environment/checkGraph';

const root = path.resolve(__dirname, '../..');
// Through the trainer's loader, as the trainer loads it (its telemetry off: telemetry.test.ts).
const loaded = loadOnnxRuntime();
if ('error' in loaded) throw new Error(loaded.error);
const ort = loaded.ort;
const setupHint = 'WebGPU runs here on Mesa 25 lavapipe: run test/setup/ensure-deps.sh as root (npm test does).';

function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'trainer/bridges/cli/main.ts'), ...args],
    { encoding: 'utf8', cwd: root, timeout: 180_000, env },
  );
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function runCheckGraph(provider: 'cpu' | 'webgpu'): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(checkGraphBytes(), {
    executionProviders: [provider],
    logSeverityLevel: 3,
  });
  const { x, w, b } = checkInputs();
  const out = await session.run({
    x: new ort.Tensor('float32', x, [CHECK_ROWS, CHECK_INNER]),
    w: new ort.Tensor('float32', w, [CHECK_INNER, CHECK_COLS]),
    b: new ort.Tensor('float32', b, [CHECK_COLS]),
  });
  const y = (await out.y.getData()) as Float32Array;
  await session.release();
  return y;
}

describe('rollout-studio env', () => {
  it('--json emits one report that validates, with CPU available and a WebGPU adapter found', () => {
    const { status, stdout, stderr } = runCli(['env', '--json']);
    assert.equal(status, 0, stderr);
    const report = parseWith(EnvironmentReport, JSON.parse(stdout), 'rollout-studio env --json');
    assert.equal(report.providers.cpu.available, true, report.providers.cpu.reason);
    assert.equal(
      report.providers.webgpu.available,
      true,
      `${report.providers.webgpu.reason} ${report.providers.webgpu.error ?? ''} — ${setupHint}`,
    );
    const adapter = report.providers.webgpu.adapter;
    assert.ok(adapter, 'the WebGPU check names the adapter it ran on');
    assert.ok(adapter.vendor.length > 0 && adapter.device.length > 0, JSON.stringify(adapter));
    assert.ok(report.providers.webgpu.maxAbsError! < 1e-4);
    // No CUDA provider is installed here (the repository skips onnxruntime-node's download): the
    // report says which files are missing where, and the command that downloads them.
    const cuda = report.providers.cuda;
    assert.equal(cuda.available, false);
    if (process.platform === 'linux' && process.arch === 'x64') {
      const packageDir = path.dirname(require.resolve('onnxruntime-node/package.json'));
      const binDir = path.join(packageDir, 'bin/napi-v6/linux/x64');
      assert.deepEqual(cuda.providerLibrary, {
        installed: false,
        path: path.join(binDir, 'libonnxruntime_providers_cuda.so'),
        missing: ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'],
      });
      assert.ok(
        cuda.reason!.includes(
          `libonnxruntime_providers_cuda.so and libonnxruntime_providers_shared.so are not in ${binDir}`,
        ),
        cuda.reason,
      );
      assert.ok(
        cuda.reason!.includes(`ONNXRUNTIME_NODE_INSTALL=cuda12 node ${path.join(packageDir, 'script/install.js')}`),
        cuda.reason,
      );
    } else assert.match(cuda.reason ?? '', /Linux x64 only/);
  });

  it('prints a readable report without --json', () => {
    // A shell without MALLOC_* variables: the CLI runs the command in a second process with its own.
    const shell = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('MALLOC_')));
    const { status, stdout } = runCli(['env'], shell);
    assert.equal(status, 0);
    if (process.platform === 'linux')
      assert.match(
        stdout,
        /\nAllocator +the trainer's settings: MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967296\n/,
      );
    assert.match(stdout, /^Rollout Studio environment/);
    assert.match(stdout, /cpu\s+available/);
    assert.match(stdout, /webgpu\s+available/);
    assert.match(stdout, /adapter: /);
    assert.match(stdout, /cuda\s+unavailable\n[\s\S]*why: /);
  });

  it('exits with a usage error for an unknown option', () => {
    const { status, stderr } = runCli(['env', '--jsonn']);
    assert.equal(status, 2);
    assert.match(stderr, /Unknown option '--jsonn'/);
  });
});

describe('the check graph on WebGPU', () => {
  it('gives the same numbers as on the CPU', async () => {
    const cpu = await runCheckGraph('cpu');
    const gpu = await runCheckGraph('webgpu');
    assert.equal(gpu.length, cpu.length);
    let worst = 0;
    for (let i = 0; i < cpu.length; i++) worst = Math.max(worst, Math.abs(cpu[i] - gpu[i]));
    assert.ok(worst < 1e-5, `largest difference ${worst}`);
    // The graph is not trivial: its outputs vary.
    assert.ok(Math.max(...cpu) - Math.min(...cpu) > 0.1);
  });
});
