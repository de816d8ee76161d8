/**
 * Nothing is left behind when the editor goes away mid-training: a window reload or close takes
 * the extension host — the trainer's parent — down without a word. The trainer must notice (its
 * IPC channel closes), finish cleanly, mark the run stopped and exit, whether it was held at a
 * debugger's stop point or in the middle of an update.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { processGone, readRun } from '../../helpers/liveTraining';

const ROOT = path.resolve(__dirname, '../../..');
let workspace: string;
let config: string;

/** Run the vanishing host until it kills itself; what it printed just before. */
async function hostThatVanishes(when: 'held' | 'update'): Promise<{ pid: number; runDirectory: string }> {
  const host = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/fixtures/trainers/vanishing-host.ts'), config, when],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  host.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  host.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => host.on('close', (_code, s) => resolve(s)));
  assert.equal(signal, 'SIGKILL', `the host should have killed itself; stderr:\n${stderr}`);
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

describe('the editor going away mid-training', { timeout: 180_000 }, () => {
  before(async () => {
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'host-goes-away-'));
    config = await writeTinyAgentWorkspace(workspace);
  });
  after(() => fs.rmSync(workspace, { recursive: true, force: true }));

  it('while the trainer is held at a stop point: it stops, marks the run stopped and exits', async () => {
    const { pid, runDirectory } = await hostThatVanishes('held');
    await processGone(pid, 20_000);
    const run = readRun(runDirectory);
    assert.equal(run.status, 'stopped');
    assert.ok(run.endedAt);
    // Held in step 1's rollout: that step is dropped, nothing half-written is left (step 0 is the initial checkpoint).
    assert.equal(run.lastStep, 0);
    assert.deepEqual(new RunStoreReader(runDirectory).steps(), []);
  });

  it('during an update: the update completes, its step is recorded, the run is stopped', async () => {
    const { pid, runDirectory } = await hostThatVanishes('update');
    await processGone(pid, 20_000);
    const run = readRun(runDirectory);
    assert.equal(run.status, 'stopped');
    const reader = new RunStoreReader(runDirectory);
    assert.equal(run.lastStep, 1);
    assert.deepEqual(reader.steps(), [1]);
    const { records, tornLastLine } = reader.trajectories(1);
    assert.equal(tornLastLine, false);
    assert.equal(records.length, 4);
    assert.deepEqual(
      reader
        .metrics()
        .records.filter((m) => m.kind === 'train')
        .map((m) => m.step),
      [1],
    );
  });
});
