/**
 * Runs the mocha suite in test/vscode/ inside real VS Code: code-server's Node extension
 * host, with this repository loaded as the extension under development. The workbench is
 * opened in headless Chromium with the `payload` URL parameter (extensionDevelopmentPath,
 * extensionTestsPath); when the suite ends the workbench calls window.codeAutomationExit.
 *
 *   npx tsx test/harness/runExtensionTests.ts      (after npm run build)
 *   ROLLOUT_TEST_GREP='Training live' npx tsx test/harness/runExtensionTests.ts   (only matching tests)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { launchBrowser } from './browser';
import { codeServerBinary, createProfile, startCodeServer } from './codeServer';
import { repoRoot, testOutputDir } from './paths';
import { writeTinyAgentWorkspace } from '../fixtures/tinyAgent';

const TIMEOUT_MS = Number(process.env.EXTENSION_TESTS_TIMEOUT_MS ?? 15 * 60_000);

async function main(): Promise<number> {
  const testsEntry = path.join(repoRoot, 'dist/test/vscode/index.js');
  if (!fs.existsSync(testsEntry)) throw new Error(`${testsEntry} is missing: run npm run build first`);
  const bin = codeServerBinary();
  const profile = createProfile(path.join(testOutputDir, 'code-server', 'extension-tests'));
  const workspace = path.join(testOutputDir, 'workspaces', 'extension-tests');
  fs.rmSync(workspace, { recursive: true, force: true });
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), workspace, { recursive: true });
  // A training config to train live (training.test.ts): the warm-started tiny agent, built here
  // in plain Node because the extension host never loads onnxruntime.
  await writeTinyAgentWorkspace(workspace);
  const resultLog = path.join(testOutputDir, 'extension-tests.log');
  fs.rmSync(resultLog, { force: true });

  const server = await startCodeServer(bin, profile, workspace, {
    ROLLOUT_TEST_LOG: resultLog,
    ROLLOUT_TEST_WORKSPACE: workspace,
    ...(process.env.ROLLOUT_TEST_GREP ? { ROLLOUT_TEST_GREP: process.env.ROLLOUT_TEST_GREP } : {}),
  });
  const browser = await launchBrowser();
  let printed = 0;
  const flushLog = () => {
    if (!fs.existsSync(resultLog)) return;
    const text = fs.readFileSync(resultLog, 'utf8');
    process.stdout.write(text.slice(printed));
    printed = text.length;
  };
  const ticker = setInterval(flushLog, 1000);
  try {
    const page = await browser.newPage();
    let exit!: (code: number) => void;
    const exited = new Promise<number>((resolve) => (exit = resolve));
    await page.exposeFunction('codeAutomationExit', (code: number) => exit(code));
    page.on('console', (message) => {
      const text = message.text();
      if (message.type() === 'error' && !/favicon|ERR_NAME_NOT_RESOLVED|net::ERR/.test(text))
        console.log(`  [workbench] ${text.slice(0, 400)}`);
    });
    const remote = (p: string) => `vscode-remote://127.0.0.1:${server.port}${p}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', remote(repoRoot)],
      ['extensionTestsPath', remote(testsEntry)],
    ]);
    await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(payload)}`);
    const code = await Promise.race([
      exited,
      new Promise<number>((resolve) => setTimeout(() => resolve(-1), TIMEOUT_MS)),
    ]);
    flushLog();
    if (code === -1) {
      console.error(`extension tests did not finish within ${TIMEOUT_MS / 1000} s; code-server log: ${server.logFile}`);
      return 1;
    }
    console.log(`extension tests in code-server finished with exit code ${code}`);
    return code === 0 ? 0 : 1;
  } finally {
    clearInterval(ticker);
    await browser.close();
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
