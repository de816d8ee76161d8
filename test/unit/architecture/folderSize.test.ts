import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

/**
 * A folder a newcomer can take in at a glance: no folder of shipped code (trainer/, extension/,
 * webview/) holds more than 20 files side by side. Past that, group the files by what they are
 * for in folders of their own, as pipeline/training/ is grouped by stage.
 */

const root = path.resolve(__dirname, '..', '..', '..');
const LIMIT = 20;

/** Each folder holding more than `limit` of the given files directly, with its count. */
export function crowdedFolders(files: readonly string[], limit: number): string[] {
  const counts = new Map<string, number>();
  for (const file of files) counts.set(path.posix.dirname(file), (counts.get(path.posix.dirname(file)) ?? 0) + 1);
  return [...counts]
    .filter(([, n]) => n > limit)
    .map(([folder, n]) => `${folder}: ${n} files`)
    .sort();
}

describe('folders of shipped code', () => {
  it(`hold at most ${LIMIT} files side by side`, () => {
    const tracked = execFileSync('git', ['ls-files', 'trainer', 'extension', 'webview'], {
      cwd: root,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
    assert.ok(tracked.length > 300, `listed ${tracked.length} files`);
    assert.deepEqual(crowdedFolders(tracked, LIMIT), []);
  });

  it('the count sees a crowded folder, not its subfolders', () => {
    const files = [
      ...Array.from({ length: 3 }, (_, i) => `trainer/a/f${i}.ts`),
      ...Array.from({ length: 3 }, (_, i) => `trainer/a/b/g${i}.ts`),
    ];
    assert.deepEqual(crowdedFolders(files, 2), ['trainer/a/b: 3 files', 'trainer/a: 3 files']);
    assert.deepEqual(crowdedFolders(files, 3), []);
  });
});
