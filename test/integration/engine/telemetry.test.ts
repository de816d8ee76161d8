/**
 * onnxruntime's own telemetry stays off in the trainer's processes unless the user turns it on.
 * onnxruntime-node 1.30's Linux build writes a device id and an event queue (for upload to
 * Microsoft) under the user's cache folder when a process creates a session and
 * ORT_DISABLE_TELEMETRY is not 1. Each case runs a fresh process with its own HOME and
 * XDG_CACHE_HOME and looks for that folder (and the SDK's /tmp/mat-debug-<pid>.log) afterwards;
 * the control case (the user's own ORT_DISABLE_TELEMETRY=0) shows the check sees the telemetry
 * when it is on.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EnvironmentReport, parseWith } from '#trainer/contract/protocol';

const root = path.resolve(__dirname, '../../..');

/** Where the 1DS SDK in onnxruntime keeps its device id and event queue, under a cache folder. */
const TELEMETRY_DIR = path.join('Microsoft', 'DeveloperTools', '.onnxruntime');

/**
 * The device's worker runs one small graph: the path every training, evaluation and re-roll takes
 * (onnxruntime is loaded in the worker thread, not on the main one).
 */
const WORKER_DEVICE_SCRIPT = `
const { createDevice } = require(${JSON.stringify(path.join(root, 'trainer/foundations/engine/device/device.ts'))});
const { Graph } = require(${JSON.stringify(path.join(root, 'trainer/foundations/engine/graph.ts'))});
const op = require(${JSON.stringify(path.join(root, 'trainer/foundations/engine/ops/index.ts'))});
const { serializeGraph } = require(${JSON.stringify(path.join(root, 'trainer/foundations/engine/serialize.ts'))});
(async () => {
  const g = new Graph('telemetry_probe');
  g.output(op.add(g.input('x', 'float32', [2]), g.input('x2', 'float32', [2])), 'y');
  const device = createDevice('cpu');
  const id = await device.load({ model: serializeGraph(g), settings: {} });
  const x = { dtype: 'float32', shape: [2], data: Float32Array.from([1, 2]) };
  const { y } = await device.run(id, { x, x2: x }, { y: 'return' });
  process.stdout.write(JSON.stringify(Array.from(y.data)));
  await device.close();
})().catch((error) => { console.error(error); process.exit(1); });
`;

/**
 * Variables by which onnxruntime's telemetry recognises a CI machine and stays silent (found in
 * its 1.30 binary's strings; `CI=true` is what our CI sets). Each case runs without them, as on a
 * user's machine: otherwise the control case could not see the telemetry.
 */
const CI_VARIABLES = [
  'CI',
  'TF_BUILD',
  'GITHUB_ACTIONS',
  'GITLAB_CI',
  'CIRCLECI',
  'TRAVIS',
  'JENKINS_URL',
  'CODEBUILD_BUILD_ID',
  'BUILDKITE',
  'TEAMCITY_VERSION',
  'APPVEYOR',
  'BITBUCKET_BUILD_NUMBER',
  'ORT_RUNNING_UNIT_TESTS',
];

interface Case {
  status: number | null;
  stdout: string;
  stderr: string;
  /** Whether onnxruntime wrote its telemetry folder under the process's cache folder. */
  telemetryWritten: boolean;
}

/** Runs `args` (after node) with a HOME and cache folder of its own and `ORT_DISABLE_TELEMETRY` as given. */
function runIsolated(args: string[], telemetrySetting: string | undefined): Case {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-telemetry-'));
  try {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache') };
    for (const name of ['ORT_DISABLE_TELEMETRY', ...CI_VARIABLES]) delete env[name];
    if (telemetrySetting !== undefined) env.ORT_DISABLE_TELEMETRY = telemetrySetting;
    const result = spawnSync(process.execPath, ['--import', 'tsx', ...args], {
      encoding: 'utf8',
      cwd: root,
      timeout: 180_000,
      env,
    });
    // The SDK's debug log: an empty file per process that runs the telemetry.
    const debugLog = path.join('/tmp', `mat-debug-${result.pid}.log`);
    const telemetryWritten =
      [path.join(home, '.cache'), home].some((dir) => fs.existsSync(path.join(dir, TELEMETRY_DIR))) ||
      fs.existsSync(debugLog);
    fs.rmSync(debugLog, { force: true });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr, telemetryWritten };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

describe("onnxruntime's telemetry", () => {
  it('is off in a training process (the device worker) unless the user set ORT_DISABLE_TELEMETRY', () => {
    const off = runIsolated(['-e', WORKER_DEVICE_SCRIPT], undefined);
    assert.equal(off.status, 0, off.stderr);
    assert.equal(off.stdout, '[2,4]', 'the graph ran');
    assert.equal(off.telemetryWritten, false, 'no telemetry folder was written');
  });

  it('is on when the user chose it (ORT_DISABLE_TELEMETRY=0): the check above can see it', () => {
    const on = runIsolated(['-e', WORKER_DEVICE_SCRIPT], '0');
    assert.equal(on.status, 0, on.stderr);
    assert.equal(on.stdout, '[2,4]');
    assert.equal(on.telemetryWritten, true, `onnxruntime wrote ${TELEMETRY_DIR} under the cache folder`);
  });

  it('is off in `rollout-studio env` (onnxruntime on the main thread), and the report says so', () => {
    const env = runIsolated([path.join(root, 'trainer/bridges/cli/main.ts'), 'env', '--json'], undefined);
    assert.equal(env.status, 0, env.stderr);
    const report = parseWith(EnvironmentReport, JSON.parse(env.stdout), 'rollout-studio env --json');
    assert.equal(report.providers.cpu.available, true, report.providers.cpu.reason);
    assert.equal(report.onnxruntime.telemetry, 'off (ORT_DISABLE_TELEMETRY=1)');
    assert.equal(env.telemetryWritten, false, 'no telemetry folder was written');
  });
});
