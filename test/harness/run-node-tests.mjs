// Runs node's built-in test runner over every *.test.ts under the given folders, with tsx
// for TypeScript. (Node 20's --test does not expand globs itself.)
//   node test/harness/run-node-tests.mjs test/unit [test/integration ...]
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', '..');
const dirs = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passThrough = process.argv.slice(2).filter((a) => a.startsWith('--'));
// Each argument is a folder (every *.test.ts under it) or one test file.
const files = dirs.flatMap((dir) =>
  fs.statSync(path.join(root, dir)).isFile()
    ? [dir]
    : fs
        .readdirSync(path.join(root, dir), { recursive: true })
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => path.join(dir, f))
        .sort(),
);
if (files.length === 0) {
  console.error(`no *.test.ts files under ${dirs.join(', ')}`);
  process.exit(1);
}
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...passThrough, ...files], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
