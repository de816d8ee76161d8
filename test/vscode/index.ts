/**
 * Entry point VS Code calls inside the extension host (extensionTestsPath): runs every
 * suite/*.test.js with mocha. Results also go to the file named by ROLLOUT_TEST_LOG when the
 * harness sets it, because the extension host's stdout is not the harness's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Mocha from 'mocha';

export function run(): Promise<void> {
  const logFile = process.env.ROLLOUT_TEST_LOG;
  const log = (line: string) => {
    console.log(line);
    if (logFile) fs.appendFileSync(logFile, line + '\n');
  };
  // ROLLOUT_TEST_GREP runs only the tests whose titles match (for working on one suite).
  const grep = process.env.ROLLOUT_TEST_GREP;
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 120_000, reporter: 'spec', ...(grep ? { grep } : {}) });
  const suiteDir = path.join(__dirname, 'suite');
  for (const file of fs.readdirSync(suiteDir).sort())
    if (file.endsWith('.test.js')) mocha.addFile(path.join(suiteDir, file));
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) =>
      failures ? reject(new Error(`${failures} extension test(s) failed`)) : resolve(),
    );
    const title = (test: Mocha.Runnable) => test.titlePath().join(' › ');
    runner.on('pass', (test) => log(`  ok    ${title(test)} (${test.duration} ms)`));
    runner.on('fail', (test, error: Error) =>
      log(`  FAIL  ${title(test)}\n        ${(error.stack ?? String(error)).split('\n').join('\n        ')}`),
    );
    runner.on('end', () =>
      log(`extension tests: ${runner.stats?.passes ?? 0} passed, ${runner.stats?.failures ?? 0} failed`),
    );
  });
}
