/**
 * Every way a training process ends is recorded, with real trainer processes on the tiny agent:
 * - SIGTERM (docker stop, systemd, Kubernetes, `timeout`) and SIGHUP (a closed terminal) stop the
 *   run as Ctrl-C does: the run is `stopped`, its lock released, the exit code 128 + the signal's;
 * - a second signal ends the process at once, and the run says so (`failed`, with the reason);
 * - the CLI runs the trainer as a second process with the allocator settings: a terminal's Ctrl-C,
 *   which reaches both, is one clean stop, and a launcher killed with SIGKILL takes the trainer along;
 * - a stop during the warm start ends it after the SFT step in flight: no more SFT steps, no
 *   evaluation, no checkpoint of a half warm-started model;
 * - a tool kept on the trainer's thread that calls `process.exit(0)` does not pass for a finished
 *   training: the run is `failed` with the reason, the lock released, the exit code non-zero.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ALLOCATOR_ENV } from '#trainer/contract/allocatorEnv';
import { readRunLock } from '#trainer/contract/runstore/runLock';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { createTrainingFixture } from '../../helpers/trainingFixture';
import { startCli } from '../../helpers/cliProcess';
import { processGone, readRun } from '../../helpers/liveTraining';

const EXAMPLE_TOOLS = path.resolve(__dirname, '../../../examples/multihop-search/tools');
let workspace: string;
let config: string;

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'signals-'));
  config = await writeTinyAgentWorkspace(workspace, { steps: 30 });
});
after(() => fs.rmSync(workspace, { recursive: true, force: true }));

async function until(what: string, check: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** No allocator settings, as a user's shell has it (spawn leaves out undefined): the CLI adds its own. */
function withoutMallocSettings(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.keys(ALLOCATOR_ENV).map((name) => [name, undefined]));
}

/** `train` started from a shell without MALLOC_* settings, once its run has a step: the launcher and the trainer's pid. */
async function trainFromAShell(name: string) {
  const runDir = path.join(workspace, 'runs', name);
  const launcher = startCli(['train', config, '--run-dir', runDir], { cwd: workspace, env: withoutMallocSettings() });
  await until('step 1', () => lastStep(runDir) >= 1);
  const trainerPid = readRunLock(runDir)?.pid;
  assert.ok(trainerPid !== undefined && trainerPid !== launcher.child.pid, 'the run is written by a second process');
  return { runDir, launcher, trainerPid };
}

function lastStep(runDir: string): number {
  try {
    return readRun(runDir).lastStep ?? -1;
  } catch {
    return -1;
  }
}

describe('signals and unexpected exits end a run recorded', { timeout: 600_000 }, () => {
  for (const [signal, code] of [
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`${signal} stops the run cleanly: stopped, lock released, exit ${code}`, async () => {
      const runDir = path.join(workspace, 'runs', signal);
      const trainer = startCli(['train', config, '--run-dir', runDir], { cwd: workspace });
      await until('step 1', () => lastStep(runDir) >= 1);
      trainer.child.kill(signal);
      const result = await trainer.done;
      assert.equal(result.signal, null, 'it exited by itself, not killed by the signal');
      assert.equal(result.code, code, result.stderr);
      assert.match(result.stderr, new RegExp(`${signal}: stopping after the current turn`));
      const run = readRun(runDir);
      assert.equal(run.status, 'stopped');
      assert.ok((run.lastStep ?? 0) < 30, 'it stopped early');
      assert.equal(readRunLock(runDir), undefined, 'its lock is gone');
    });
  }

  it('a second signal ends the process at once; the run is failed, saying why, and its lock is gone', async () => {
    const runDir = path.join(workspace, 'runs', 'twice');
    const trainer = startCli(['train', config, '--run-dir', runDir], { cwd: workspace });
    await until('step 1', () => lastStep(runDir) >= 1);
    // Two different signals: two of the same, sent together, may reach the process as one.
    trainer.child.kill('SIGTERM');
    trainer.child.kill('SIGINT');
    const result = await trainer.done;
    const run = readRun(runDir);
    assert.equal(run.status, 'failed');
    // Both are pending at once, and Linux delivers the lower-numbered first: either order can arrive.
    const order =
      /^(SIGINT after SIGTERM|SIGTERM after SIGINT): ended at once; the step in flight was not recorded$/.exec(
        run.error?.message ?? '',
      );
    assert.ok(order, run.error?.message);
    // The process ended by the second (ending) signal, raised again after the run was recorded
    // (a shell reads 128 + its number): no abort on the way out.
    assert.equal(
      result.signal,
      order[1].startsWith('SIGINT') ? 'SIGINT' : 'SIGTERM',
      `code ${result.code}, signal ${result.signal}: ${result.stderr}`,
    );
    assert.doesNotMatch(result.stderr, /terminate called|Napi::Error/);
    assert.equal(readRunLock(runDir), undefined);
  });

  it('the CLI runs the trainer as a second process with the allocator settings; a Ctrl-C that reaches both stops cleanly', async () => {
    const { runDir, launcher, trainerPid } = await trainFromAShell('relaunched');
    const environ = fs.readFileSync(`/proc/${trainerPid}/environ`, 'utf8').split('\0');
    for (const [name, value] of Object.entries(ALLOCATOR_ENV)) assert.ok(environ.includes(`${name}=${value}`), name);
    // What a terminal does: the same SIGINT to each process of its foreground group.
    process.kill(trainerPid, 'SIGINT');
    launcher.child.kill('SIGINT');
    const result = await launcher.done;
    assert.equal(result.code, 130, result.stderr);
    assert.equal(readRun(runDir).status, 'stopped', 'one Ctrl-C, relayed too, is still a clean stop');
    assert.equal(readRunLock(runDir), undefined);
  });

  it('a launcher killed with SIGKILL takes its trainer with it', async () => {
    const { launcher, trainerPid } = await trainFromAShell('launcher-killed');
    launcher.child.kill('SIGKILL');
    await launcher.done;
    await processGone(trainerPid, 10_000);
  });

  it("a tool with isolation: 'trainer' that calls process.exit(0): the run is failed with the reason, and the exit code is not 0", async () => {
    // The example's tools as the tiny agent was warm-started to call them, kept on the trainer's thread, ending the process.
    const toolsModule = path.join(workspace, 'exitingTools.ts');
    fs.writeFileSync(
      toolsModule,
      `import { tools as exampleTools } from ${JSON.stringify(EXAMPLE_TOOLS)};
export const tools = exampleTools.map((tool) => Object.assign(Object.create(Object.getPrototypeOf(tool)), tool, { isolation: 'trainer', execute: () => process.exit(0) }));
`,
    );
    const exiting = await writeTinyAgentWorkspace(path.join(workspace, 'exiting'), {
      steps: 3,
      toolsModule,
      name: 'exiting',
    });
    const runDir = path.join(workspace, 'runs', 'exiting');
    const result = await startCli(['train', exiting, '--run-dir', runDir], { cwd: path.dirname(exiting) }).done;
    assert.equal(result.code, 1, `exit code: ${result.stderr}`);
    const run = readRun(runDir);
    assert.equal(run.status, 'failed');
    assert.match(
      run.error?.message ?? '',
      /^process\.exit\(0\) was called while the run was in progress, at .*exitingTools\.ts.* \(a tool with isolation: 'trainer', a reward or a config must not end the process\)$/,
    );
    assert.match(result.stderr, /rollout-studio: the run failed: process\.exit\(0\) was called/);
    assert.equal(readRunLock(runDir), undefined);
  });

  it('Ctrl-C during the warm start stops after the SFT step in flight: no evaluation, no checkpoint 0', async () => {
    const fixture = createTrainingFixture();
    try {
      // 16 demonstrations, one per step, 50 epochs: 800 SFT steps, minutes if the stop were not honoured.
      const sftConfig = fixture.writeConfig('warm.config.ts', {
        sft: "{ data: 'data/sft.jsonl', epochs: 50, lr: 1e-3, batchSize: 1 }",
      });
      const runDir = path.join(fixture.dir, 'runs', 'warm');
      const trainer = startCli(['train', sftConfig, '--run-dir', runDir], { cwd: fixture.dir });
      const sftSteps = () =>
        fs.existsSync(path.join(runDir, 'metrics.jsonl'))
          ? fs
              .readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8')
              .split('\n')
              .filter((l) => l.includes('"kind":"sft"')).length
          : 0;
      await until('the first SFT steps', () => sftSteps() >= 2);
      trainer.child.kill('SIGINT');
      const signalled = Date.now();
      const result = await trainer.done;
      assert.ok(Date.now() - signalled < 15_000, `it ended ${Date.now() - signalled} ms after Ctrl-C`);
      assert.equal(result.code, 130, result.stderr);
      assert.match(
        result.stdout,
        /warm start stopped after sft step \d+\/800; a half warm-started model is not checkpointed/,
      );
      const metrics = fs.readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8');
      assert.ok(sftSteps() < 100, `${sftSteps()} SFT steps ran after the stop`);
      assert.doesNotMatch(metrics, /"kind":"eval"/, 'no evaluation after the stop');
      assert.equal(readRun(runDir).status, 'stopped');
      assert.equal(
        fs.existsSync(path.join(runDir, 'checkpoints', 'step-000000')),
        false,
        'no checkpoint of a half warm start',
      );
      assert.equal(readRunLock(runDir), undefined);
    } finally {
      fixture.cleanup();
    }
  });
});
