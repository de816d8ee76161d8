// Runs node's built-in test runner over every *.test.ts under the given folders, with tsx
// for TypeScript. (Node 20's --test does not expand globs itself.)
//   node test/harness/run-node-tests.mjs test/unit [test/integration ...]
//   node test/harness/run-node-tests.mjs --retry-failed-file-once test/e2e
// --retry-failed-file-once runs the files one by one and runs a failing file a second time,
// for the end-to-end stage only: those tests drive a real editor in a real browser, where a
// page can still miss an event on a loaded 2-core machine (Playwright's own CI advice is to
// retry). A file that fails twice fails the stage; one that passes on its retry is named as
// flaky at the end, so the flake is seen and can be fixed rather than hidden.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', '..');
const retryFlag = '--retry-failed-file-once';
const retry = process.argv.includes(retryFlag);
const dirs = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passThrough = process.argv.slice(2).filter((a) => a.startsWith('--') && a !== retryFlag);
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
const runTests = (testFiles) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...passThrough, ...testFiles], {
    cwd: root,
    stdio: 'inherit',
  }).status ?? 1;

if (!retry) process.exit(runTests(files));

const flaky = [];
const failed = [];
for (const file of files) {
  if (runTests([file]) === 0) continue;
  console.log(`\n${file} failed; running it once more (see the failure above)\n`);
  if (runTests([file]) === 0) flaky.push(file);
  else failed.push(file);
}
for (const file of flaky)
  console.log(`FLAKY: ${file} failed once and passed when run again — its first failure is printed above`);
for (const file of failed) console.log(`FAILED: ${file} failed twice`);
process.exit(failed.length > 0 ? 1 : 0);
