/**
 * One writer per run, with real trainer processes:
 * - two `train --run-dir same` started together: one trains, the other is refused naming it;
 * - `--resume` of a run that is still training is refused, and the training goes on untouched;
 * - a trainer killed with SIGKILL leaves a run that readers show as interrupted; `--resume` takes
 *   the dead writer's lock over and ends with exactly the records of an uninterrupted run;
 * - `train … | head -2`: the reader of the output goes away, the run stops cleanly (`stopped`).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { readRunLock } from '#trainer/contract/runstore/runLock';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { runCli, startCli } from '../../helpers/cliProcess';
import { processGone, readRun } from '../../helpers/liveTraining';
import { assertSameCheckpoint, assertSameRecords } from '../../helpers/runComparison';

let workspace: string;
let config: string;

before(async () => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'writers-'));
  config = await writeTinyAgentWorkspace(workspace, { steps: 4 });
  fs.writeFileSync(
    config,
    fs.readFileSync(config, 'utf8').replace('checkpointEvery: 0', 'checkpointEvery: 1, keepCheckpoints: 10'),
  );
});
after(() => fs.rmSync(workspace, { recursive: true, force: true }));

/** Wait until `check` holds (polling), or fail after `timeoutMs`. */
async function until(what: string, check: () => boolean, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function lastStep(runDir: string): number {
  try {
    return readRun(runDir).lastStep ?? -1;
  } catch {
    return -1;
  }
}

describe('one writer per run', { timeout: 600_000 }, () => {
  it('two trainers started together on one run directory: one trains, the other is refused naming it', async () => {
    const runDir = path.join(workspace, 'runs', 'together');
    const [a, b] = [
      startCli(['train', config, '--run-dir', runDir, '--steps', '2'], { cwd: workspace }),
      startCli(['train', config, '--run-dir', runDir, '--steps', '2'], { cwd: workspace }),
    ];
    // The writer is the trainer process each CLI starts (relaunch.ts): the lock names its pid.
    let writer: number | undefined;
    const watch = setInterval(() => (writer ??= readRunLock(runDir)?.pid), 10);
    const results = await Promise.all([a.done, b.done]).finally(() => clearInterval(watch));
    assert.ok(writer !== undefined, 'the lock was seen while the run trained');
    const refused = results.findIndex((r) => r.code === 1);
    assert.notEqual(
      refused,
      -1,
      `one must be refused: ${results.map((r) => `${r.code}: ${r.stderr}`).join('\n---\n')}`,
    );
    assert.equal(results[1 - refused].code, 0, results[1 - refused].stderr);
    assert.match(
      results[refused].stderr,
      new RegExp(`together is being written by another process: pid ${writer} on ${os.hostname()}`),
    );
    const reader = new RunStoreReader(runDir);
    assert.equal(reader.run().status, 'finished');
    assert.deepEqual(
      reader
        .metrics()
        .records.filter((m) => m.kind === 'train')
        .map((m) => m.step),
      [1, 2],
    );
    for (const step of reader.steps()) reader.trajectories(step); // no trajectory recorded twice
  });

  it('--resume of a run that is still training is refused, and the training goes on untouched', async () => {
    const runDir = path.join(workspace, 'runs', 'live');
    // Long enough that the refused resume (a few seconds to start) meets it still training.
    const live = startCli(['train', config, '--run-dir', runDir, '--steps', '24'], { cwd: workspace });
    await until('step 1 of the live run', () => lastStep(runDir) >= 1);
    const writer = readRunLock(runDir)?.pid;
    const resume = await runCli(['train', config, '--resume', runDir], { cwd: workspace });
    assert.equal(resume.code, 1, resume.stderr);
    assert.match(
      resume.stderr,
      new RegExp(`live is being written by another process: pid ${writer} on ${os.hostname()}`),
    );
    const done = await live.done;
    assert.equal(done.code, 0, done.stderr);
    const reader = new RunStoreReader(runDir);
    assert.equal(reader.run().status, 'finished');
    assert.deepEqual(
      reader
        .metrics()
        .records.filter((m) => m.kind === 'train')
        .map((m) => m.step),
      Array.from({ length: 24 }, (_, i) => i + 1),
    );
  });

  it('a trainer killed with SIGKILL: its run reads as interrupted, and --resume takes over and ends exactly as an uninterrupted run', async () => {
    const straight = path.join(workspace, 'runs', 'straight');
    const straightRun = await runCli(['train', config, '--run-dir', straight], { cwd: workspace });
    assert.equal(straightRun.code, 0, straightRun.stderr);

    const killed = path.join(workspace, 'runs', 'killed');
    const victim = startCli(['train', config, '--run-dir', killed], { cwd: workspace });
    await until('step 2 of the run to kill', () => lastStep(killed) >= 2);
    // The CLI's launcher, killed, takes its trainer (the writer) with it, as SIGKILL does (relaunch.ts).
    const writer = readRunLock(killed)?.pid;
    assert.ok(writer !== undefined);
    victim.child.kill('SIGKILL');
    await processGone(writer);
    assert.equal(readRun(killed).status, 'running', 'run.json still says running');
    assert.equal(readRunLock(killed)?.pid, writer, "the dead writer's lock is left");
    assert.equal(new RunStoreReader(killed).run().status, 'interrupted', 'readers see the writer is gone');

    const resumed = await runCli(['train', config, '--resume', killed], { cwd: workspace });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(
      resumed.stdout,
      new RegExp(
        `its last writer \\(pid ${writer} on ${os.hostname()}, last seen .*\\) is gone; resuming in its place`,
      ),
    );
    assert.equal(new RunStoreReader(killed).run().status, 'finished');
    assertSameRecords(straight, killed, 'killed and resumed');
    assertSameCheckpoint(
      path.join(straight, 'checkpoints/step-000004'),
      path.join(killed, 'checkpoints/step-000004'),
      'killed and resumed',
    );
  });

  it('train … | head -2: the run stops cleanly when the reader of its output goes away', async () => {
    const runDir = path.join(workspace, 'runs', 'piped');
    const piped = startCli(['train', config, '--run-dir', runDir], { cwd: workspace });
    // What head -2 does: read two lines, then close its end of the pipe.
    await until('two lines of output', () => piped.stdout().split('\n').length > 2);
    piped.child.stdout.destroy();
    const result = await piped.done;
    assert.equal(result.signal, null);
    assert.equal(result.code, 0, result.stderr);
    const run = readRun(runDir);
    assert.equal(run.status, 'stopped', 'the run is not left running');
    assert.ok((run.lastStep ?? 0) < 4, 'it stopped early');
    assert.equal(readRunLock(runDir), undefined, 'its lock is gone');
  });
});
