/**
 * Records are written whole or not at all. A device that takes only part of a write gets the
 * rest again; one that takes nothing more fails the write loudly, naming the file and the way
 * out, and the part it did take is removed, so the next record is never glued onto half of one.
 * The kernel's own "disk full" (/dev/full) and a read-only folder get messages that say what to do.
 */
import { afterEach, describe, it, mock } from 'node:test';
import * as assert from 'node:assert/strict';
// nodeFs: the module object itself (not a namespace copy), whose writeSync the run store calls: the test double replaces it there.
import nodeFs, * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MetricsRecord } from '#trainer/contract/protocol';
import { appendJsonl, readJsonl, writeFileAtomic } from '#trainer/contract/runstore/jsonl';
import { recordedRunWriter, writeRecordedRun } from '../../../fixtures/recordedRun';

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'durable-writes-'));
}

const record = (step: number): MetricsRecord => ({
  step,
  time: '2026-12-03T00:00:00Z',
  kind: 'train',
  values: { 'reward/mean': step / 10 },
});

afterEach(() => mock.restoreAll());

describe('appending a record', () => {
  it('writes the rest of a short write again', () => {
    const file = path.join(tmpDir(), 'metrics.jsonl');
    const write = nodeFs.writeSync;
    // The device takes at most 7 bytes a call (as a full pipe or a network file system may).
    mock.method(nodeFs, 'writeSync', (fd: number, buffer: Buffer, offset: number, length: number) =>
      write(fd, buffer, offset, Math.min(length, 7)),
    );
    appendJsonl(file, [record(1), record(2)]);
    mock.restoreAll();
    assert.deepEqual(readJsonl(file, MetricsRecord).records, [record(1), record(2)]);
  });

  it('fails naming the file when the device takes no more, and leaves no half record behind', () => {
    const file = path.join(tmpDir(), 'metrics.jsonl');
    appendJsonl(file, [record(1)]);
    const before = fs.readFileSync(file, 'utf8');
    const write = nodeFs.writeSync;
    let calls = 0;
    // Half of the record goes in, then nothing: the disk is full.
    mock.method(nodeFs, 'writeSync', (fd: number, buffer: Buffer, offset: number, length: number) =>
      ++calls === 1 ? write(fd, buffer, offset, Math.floor(length / 2)) : 0,
    );
    assert.throws(
      () => appendJsonl(file, [record(2)]),
      (error: Error) => {
        assert.equal(error.name, 'StorageError');
        assert.match(
          error.message,
          new RegExp(`^${file}: the device accepted only \\d+ of \\d+ bytes and then no more`),
        );
        assert.match(
          error.message,
          /the partial record was removed\. Free space, then --resume continues from the last checkpoint/,
        );
        return true;
      },
    );
    mock.restoreAll();
    assert.equal(fs.readFileSync(file, 'utf8'), before, 'the half record is gone');
    // Space is back: the next record starts on a line of its own, and the file reads whole.
    appendJsonl(file, [record(3)]);
    const read = readJsonl(file, MetricsRecord);
    assert.deepEqual(read.records, [record(1), record(3)]);
    assert.equal(read.tornLastLine, false);
  });

  it(
    'says "no space left" with the file and the way out on a full disk (ENOSPC from the kernel)',
    { skip: !fs.existsSync('/dev/full') && 'no /dev/full on this system' },
    () => {
      const dir = tmpDir();
      const file = path.join(dir, 'metrics.jsonl');
      fs.symlinkSync('/dev/full', file);
      assert.throws(
        () => appendJsonl(file, [record(1)]),
        (error: Error & { code?: string }) => {
          assert.equal(error.name, 'StorageError');
          assert.equal(error.code, 'ENOSPC');
          assert.match(
            error.message,
            new RegExp(
              `^${file}: appending a record failed \\(ENOSPC\\): no space left on the device holding ${dir}\\. Free space there`,
            ),
          );
          assert.match(error.message, /--resume continues from that checkpoint/);
          return true;
        },
      );
    },
  );

  it('says what to do when the folder cannot be written', () => {
    const dir = tmpDir();
    // A file where a folder should be fails for every user, root included (ENOTDIR).
    const blocked = path.join(dir, 'runs');
    fs.writeFileSync(blocked, '');
    assert.throws(
      () => appendJsonl(path.join(blocked, 'metrics.jsonl'), [record(1)]),
      /runs\/metrics\.jsonl: opening the file to append failed \(ENOTDIR\): a part of .* is a file, not a folder/,
    );
    assert.throws(
      () => writeFileAtomic(path.join(blocked, 'run.json'), '{}'),
      /runs\/run\.json: writing the file failed \(ENOTDIR\)/,
    );
    assert.deepEqual(fs.readdirSync(dir), ['runs'], 'no temporary file is left behind');
  });
});

describe('writing an image a trajectory saw', () => {
  it('writes it whole or not at all: a full disk leaves no half image and names the file', () => {
    const dir = writeRecordedRun(path.join(tmpDir(), 'run'), {
      steps: 1,
      batch: 2,
      groupSize: 2,
      seed: 1,
      status: 'running',
    });
    const writer = recordedRunWriter(dir);
    try {
      const bytes = new Uint8Array(4096).map((_, i) => i % 251);
      const sha256 = 'a'.repeat(64);
      const write = nodeFs.writeSync;
      let calls = 0;
      mock.method(nodeFs, 'writeSync', (fd: number, buffer: Buffer, offset: number) =>
        ++calls === 1 ? write(fd, buffer, offset, 100) : 0,
      );
      assert.throws(
        () => writer.writeImages([{ sha256, format: 'png', bytes }]),
        (error: Error) => {
          assert.equal(error.name, 'StorageError');
          assert.match(error.message, new RegExp(`images/${sha256}\\.png: the device accepted only 100 of 4096 bytes`));
          return true;
        },
      );
      mock.restoreAll();
      assert.deepEqual(fs.readdirSync(path.join(dir, 'images')), [], 'neither the image nor a temporary file is left');
      // Space is back: the same image is written whole.
      writer.writeImages([{ sha256, format: 'png', bytes }]);
      assert.deepEqual(new Uint8Array(fs.readFileSync(path.join(dir, 'images', `${sha256}.png`))), bytes);
    } finally {
      writer.close();
    }
  });
});
