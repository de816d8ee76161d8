/**
 * The terminal's view of a download: a bar redrawn in place on a TTY, plain lines elsewhere.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { DownloadProgressBar } from '#trainer/bridges/cli/downloadProgress';
import type { PullProgress } from '#trainer/foundations/models/hub';

function stream(isTTY: boolean): { isTTY: boolean; text: string; write(chunk: string): boolean } {
  return {
    isTTY,
    text: '',
    write(chunk: string) {
      this.text += chunk;
      return true;
    },
  };
}

const steps: PullProgress[] = [
  { repo: 'o/m', file: 'config.json', fileIndex: 1, fileCount: 2, done: 0, total: 2_000_000, finished: false },
  { repo: 'o/m', file: 'config.json', fileIndex: 1, fileCount: 2, done: 1000, total: 2_000_000, finished: false },
  { repo: 'o/m', file: 'model.safetensors', fileIndex: 2, fileCount: 2, done: 1000, total: 2_000_000, finished: false },
  {
    repo: 'o/m',
    file: 'model.safetensors',
    fileIndex: 2,
    fileCount: 2,
    done: 1_000_000,
    total: 2_000_000,
    finished: false,
  },
  { repo: 'o/m', file: undefined, fileIndex: 2, fileCount: 2, done: 2_000_000, total: 2_000_000, finished: true },
];

describe('download progress in a terminal', () => {
  it('off a TTY: one plain line per file and one at the end, no carriage returns', () => {
    const out = stream(false);
    const bar = new DownloadProgressBar(out);
    for (const s of steps) bar.update(s);
    const lines = out.text.trimEnd().split('\n');
    assert.equal(lines.length, 3);
    assert.equal(lines[0], 'o/m: downloading config.json (file 1 of 2, 0 B of 2.00 MB so far)');
    assert.equal(lines[1], 'o/m: downloading model.safetensors (file 2 of 2, 1.00 kB of 2.00 MB so far)');
    assert.match(lines[2], /^o\/m: downloaded 2\.00 MB in \d+\.\d s$/);
    assert.ok(!out.text.includes('\r'));
  });

  it('on a TTY: a bar redrawn in place with percent, bytes and file, cleared at the end', () => {
    const out = stream(true);
    const bar = new DownloadProgressBar(out, 10);
    for (const s of steps) bar.update(s);
    const frames = out.text.split('\r\x1b[2K').filter(Boolean);
    assert.ok(frames.includes('o/m ░░░░░░░░░░ 0% 0 B/2.00 MB · 0 B/s · config.json'), frames.join('\n'));
    assert.match(frames[1], /^o\/m ░{10} 0% 1\.00 kB\/2\.00 MB · .*\/s · model\.safetensors$/);
    // Bytes of the same file within a tenth of a second are not redrawn; a new file and the end are.
    assert.equal(frames.length, 3, frames.join('\n'));
    assert.match(frames.at(-1)!, /^o\/m ██████████ 100% 2\.00 MB\/2\.00 MB/);
    assert.ok(out.text.endsWith('\r\x1b[2K'), 'the bar is cleared when done');
  });
});
