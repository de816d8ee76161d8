/**
 * Durable records under a full disk, on a tiny real model. The disk fills up (test doubles of
 * node's fs, here only: the writes of one file fail with ENOSPC) while a checkpoint is saved, or
 * while a step's metrics are appended. The run fails with a message naming the file and the way
 * out; nothing half-written is left (no `.partial` checkpoint, no cut record); the last complete
 * checkpoint stays the run's. Once there is space again, `--resume` ends exactly as a run the
 * disk never interrupted.
 */
import { after, afterEach, before, describe, it, mock } from 'node:test';
import * as assert from 'node:assert/strict';
// nodeFs: the module object itself, whose functions the trainer calls: the doubles replace them there.
import nodeFs, * as fs from 'node:fs';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { assertSameCheckpoint, assertSameRecords } from '../../helpers/runComparison';

let fixture: TrainingFixture;
let config: string;
let straight: string;

async function train(options: ConstructorParameters<typeof TrainingRun>[1]) {
  return new TrainingRun(await loadConfig(config), { inProcessDevice: true, log: () => undefined, ...options }).run();
}

before(async () => {
  fixture = createTrainingFixture();
  config = fixture.writeConfig('durable.config.ts', {
    sft: '',
    evaluation: '{ samples: 2 }',
    steps: '3',
    algorithm: "{ name: 'grpo', groupSize: 2 }",
  });
  straight = path.join(fixture.dir, 'runs', 'straight');
  await train({ runDir: straight });
});
after(() => fixture.cleanup());
afterEach(() => mock.restoreAll());

/** From now on, writes to files whose path matches `target` fail as on a full disk (after `partially` bytes, if given). */
function fillDiskFor(target: RegExp, partially?: number): void {
  const files = new Map<number, string>();
  const open = nodeFs.openSync;
  const write = nodeFs.writeSync;
  mock.method(nodeFs, 'openSync', (file: fs.PathLike, ...rest: unknown[]) => {
    const fd = (open as (...a: unknown[]) => number)(file, ...rest);
    files.set(fd, String(file));
    return fd;
  });
  mock.method(nodeFs, 'writeSync', (fd: number, ...rest: unknown[]) => {
    const file = files.get(fd);
    if (file && target.test(file)) {
      if (partially !== undefined && partially > 0) {
        const [buffer, offset = 0] = rest as [Buffer, number];
        const n = (write as (...a: unknown[]) => number)(
          fd,
          buffer,
          offset,
          Math.min(partially, buffer.length - offset),
        );
        partially = 0;
        return n;
      }
      throw Object.assign(new Error(`ENOSPC: no space left on device, write`), {
        code: 'ENOSPC',
        errno: -28,
        syscall: 'write',
      });
    }
    return (write as (...a: unknown[]) => number)(fd, ...rest);
  });
}

describe('a damaged checkpoint', { timeout: 300_000 }, () => {
  it('is skipped with a warning for the newest intact one, and the resume still ends exactly as the uninterrupted run', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'damaged-newest');
    fs.cpSync(straight, runDir, { recursive: true });
    // The newest checkpoint loses the end of its weights (a disk error, a copy cut short).
    const weights = path.join(runDir, 'checkpoints/step-000003/model.safetensors');
    fs.truncateSync(weights, fs.statSync(weights).size - 100);
    const logs: string[] = [];
    assert.equal((await train({ resume: runDir, log: (line) => logs.push(line) })).run.status, 'finished');
    assert.match(
      logs.join('\n'),
      /warning: checkpoints\/step-000003 is damaged and is skipped \(.*model\.safetensors: \d+ bytes where \d+ were saved; the checkpoint is damaged\)\nwarning: resuming from checkpoints\/step-000002, the newest intact checkpoint/,
    );
    assertSameRecords(straight, runDir, 'resumed from the checkpoint before a damaged one');
    assertSameCheckpoint(
      path.join(straight, 'checkpoints/step-000003'),
      path.join(runDir, 'checkpoints/step-000003'),
      'resumed from the checkpoint before a damaged one',
    );
  });
});

describe('a full disk', { timeout: 300_000 }, () => {
  it('while a checkpoint is saved: the run fails naming it, the half checkpoint goes, and a resume ends as if nothing happened', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'checkpoint-enospc');
    let failed: Error | undefined;
    await train({
      runDir,
      events: (event) => {
        // Step 1's checkpoint is saved; the disk is full by the time step 2's is.
        if (event.type === 'step.completed' && event.step === 1) fillDiskFor(/step-000002\.partial/);
      },
    }).catch((error: Error) => (failed = error));
    mock.restoreAll();
    assert.ok(failed, 'the run failed');
    assert.equal(failed.name, 'StorageError');
    assert.match(
      failed.message,
      /checkpoints\/step-000002\.partial: saving the checkpoint of step 2 failed \(ENOSPC\): no space left on the device holding .*checkpoints\. Free space there .*--resume continues from that checkpoint/,
    );
    const reader = new RunStoreReader(runDir);
    const run = reader.run();
    assert.equal(run.status, 'failed');
    assert.equal(run.lastCheckpoint, 'checkpoints/step-000001');
    // (`best`: the best evaluation's weights, kept beside the step checkpoints.)
    assert.deepEqual(
      fs.readdirSync(path.join(runDir, 'checkpoints')).sort(),
      ['best', 'step-000000', 'step-000001'],
      'no .partial folder is left',
    );

    assert.equal((await train({ resume: runDir })).run.status, 'finished');
    assertSameRecords(straight, runDir, 'resumed after a full disk during a checkpoint');
    assertSameCheckpoint(
      path.join(straight, 'checkpoints/step-000003'),
      path.join(runDir, 'checkpoints/step-000003'),
      'resumed after a full disk during a checkpoint',
    );
  });

  it('while the first checkpoint is saved: the message does not offer a --resume that has nothing to resume from', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'first-checkpoint-enospc');
    fillDiskFor(/step-000000\.partial/);
    const failed = await train({ runDir }).then(
      () => undefined,
      (error: Error) => error,
    );
    mock.restoreAll();
    assert.ok(failed, 'the run failed');
    assert.equal(failed.name, 'StorageError');
    assert.match(
      failed.message,
      /step-000000\.partial: saving the checkpoint of step 0 failed \(ENOSPC\): .*the run has no checkpoint yet, so --resume cannot continue it: start the training again once there is space$/,
    );
    assert.doesNotMatch(failed.message, /--resume continues/);
    const run = new RunStoreReader(runDir).run();
    assert.equal(run.status, 'failed');
    assert.equal(run.error?.message, failed.message, 'the run record says the same');
  });

  it('while a new run is created: the message does not offer a --resume of a run that was never written', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'create-enospc');
    fillDiskFor(/create-enospc[\\/]run\.json/);
    const failed = await train({ runDir }).then(
      () => undefined,
      (error: Error) => error,
    );
    mock.restoreAll();
    assert.ok(failed, 'the run failed');
    assert.equal(failed.name, 'StorageError');
    assert.match(
      failed.message,
      /run\.json: .*failed \(ENOSPC\): .*--resume cannot continue it: start the training again once there is space$/,
    );
    assert.doesNotMatch(failed.message, /--resume continues/);
    assert.ok(!fs.existsSync(path.join(runDir, 'run.lock')), 'the lock is released');
  });

  it('while a step is recorded: half a record is taken back, not glued to the next, and a resume ends as if nothing happened', async () => {
    const runDir = path.join(fixture.dir, 'runs', 'metrics-enospc');
    let failed: Error | undefined;
    await train({
      runDir,
      events: (event) => {
        // Step 2's trajectories are written; its metrics record goes in only 40 bytes before the disk is full.
        if (event.type === 'progress' && event.step === 2 && event.phase === 'update' && event.done === 0)
          fillDiskFor(/metrics\.jsonl$/, 40);
      },
    }).catch((error: Error) => (failed = error));
    mock.restoreAll();
    assert.ok(failed, 'the run failed');
    assert.match(failed.message, /metrics\.jsonl: appending a record failed \(ENOSPC\): no space left on the device/);
    const text = fs.readFileSync(path.join(runDir, 'metrics.jsonl'), 'utf8');
    assert.ok(text.endsWith('\n'), 'no half record at the end of metrics.jsonl');
    assert.deepEqual(
      new RunStoreReader(runDir)
        .metrics()
        .records.filter((m) => m.kind === 'train')
        .map((m) => m.step),
      [1],
    );

    assert.equal((await train({ resume: runDir })).run.status, 'finished');
    assertSameRecords(straight, runDir, 'resumed after a full disk during a record');
  });
});
