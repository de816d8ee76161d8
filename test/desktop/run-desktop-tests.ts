/**
 * npm run test:desktop — the same mocha suite as the code-server run (test/vscode/), inside a
 * desktop VS Code that @vscode/test-electron downloads. Needs network access to
 * update.code.visualstudio.com the first time; CI cannot reach it and runs the code-server
 * harness instead (test/harness/runExtensionTests.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runTests } from '@vscode/test-electron';

async function main(): Promise<void> {
  const repoRoot = path.resolve(__dirname, '..', '..', '..');
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-studio-desktop-tests-'));
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), workspace, { recursive: true });
  await runTests({
    version: process.env.VSCODE_VERSION ?? '1.100.3',
    extensionDevelopmentPath: repoRoot,
    extensionTestsPath: path.join(repoRoot, 'dist/test/vscode/index.js'),
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust'],
    extensionTestsEnv: { ROLLOUT_TEST_WORKSPACE: workspace },
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
