/**
 * Runs the mocha suite in test/vscode/ inside real VS Code: code-server's Node extension
 * host, with this repository loaded as the extension under development. The workbench is
 * opened in headless Chromium with the `payload` URL parameter (extensionDevelopmentPath,
 * extensionTestsPath); when the suite ends the workbench calls window.codeAutomationExit.
 *
 *   npx tsx test/harness/runExtensionTests.ts      (after npm run build)
 *   ROLLOUT_TEST_GREP='Training live' npx tsx test/harness/runExtensionTests.ts   (only matching tests)
 *   ROLLOUT_TEST_RESTRICTED=1 npx tsx test/harness/runExtensionTests.ts   (a hostile folder in Restricted Mode)
 *
 * With ROLLOUT_TEST_RESTRICTED=1 the folder is a hostile repository (test/fixtures/hostileWorkspace.ts)
 * opened with Workspace Trust on and never trusted (no start-up prompt), and only the
 * "Restricted Mode" suite runs: the others need a trusted folder.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { launchBrowser } from './browser';
import { codeServerBinary, createProfile, startCodeServer } from './codeServer';
import { repoRoot, testOutputDir } from './paths';
import { writeTinyAgentWorkspace } from '../fixtures/tinyAgent';
import { writeHostileWorkspace } from '../fixtures/hostileWorkspace';

const RESTRICTED = process.env.ROLLOUT_TEST_RESTRICTED === '1';

/** The folder the tests open: the fixture workspace with the tiny agent, or a hostile repository for Restricted Mode. */
async function prepareWorkspace(workspace: string): Promise<void> {
  fs.rmSync(workspace, { recursive: true, force: true });
  if (RESTRICTED) return writeHostileWorkspace(workspace);
  fs.cpSync(path.join(repoRoot, 'test/fixtures/workspace'), workspace, { recursive: true });
  // A training config to train live (training.test.ts): the warm-started tiny agent, built here
  // in plain Node because the extension host never loads onnxruntime.
  await writeTinyAgentWorkspace(workspace);
}

/** Workspace Trust on, the folder left untrusted without asking: VS Code's Restricted Mode. */
const RESTRICTED_SETTINGS = {
  'security.workspace.trust.enabled': true,
  'security.workspace.trust.startupPrompt': 'never',
  'security.workspace.trust.banner': 'never',
  'security.workspace.trust.emptyWindow': false,
};

const TIMEOUT_MS = Number(process.env.EXTENSION_TESTS_TIMEOUT_MS ?? 15 * 60_000);

async function main(): Promise<number> {
  const testsEntry = path.join(repoRoot, 'dist/test/vscode/index.js');
  if (!fs.existsSync(testsEntry)) throw new Error(`${testsEntry} is missing: run npm run build first`);
  const bin = codeServerBinary();
  const name = RESTRICTED ? 'extension-tests-restricted' : 'extension-tests';
  const profile = createProfile(path.join(testOutputDir, 'code-server', name), RESTRICTED ? RESTRICTED_SETTINGS : {});
  const workspace = path.join(testOutputDir, 'workspaces', name);
  await prepareWorkspace(workspace);
  const resultLog = path.join(testOutputDir, `${name}.log`);
  fs.rmSync(resultLog, { force: true });

  const grep = RESTRICTED ? 'Restricted Mode' : process.env.ROLLOUT_TEST_GREP;
  const server = await startCodeServer(
    bin,
    profile,
    workspace,
    {
      ROLLOUT_TEST_LOG: resultLog,
      ROLLOUT_TEST_WORKSPACE: workspace,
      ...(grep ? { ROLLOUT_TEST_GREP: grep } : {}),
      ...(RESTRICTED ? { ROLLOUT_TEST_RESTRICTED: '1' } : {}),
    },
    { workspaceTrust: RESTRICTED },
  );
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
