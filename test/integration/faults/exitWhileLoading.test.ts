/**
 * A top-level `process.exit(0)` in a user's module (a config, a tools or rewards module) does not
 * pass for success: every command that loads one ends with a non-zero status and a message naming
 * the file, instead of status 0 with nothing done (issue 53).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCli } from '../../helpers/cliProcess';

let workspace: string;

before(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'exit-while-loading-'));
  fs.writeFileSync(
    path.join(workspace, 'exits.ts'),
    'process.exit(0);\nexport default {};\nexport const rewards = {};\n',
  );
  // Caught by the module itself: the module still did not load as written.
  fs.writeFileSync(
    path.join(workspace, 'catches.ts'),
    'try {\n  process.exit(0);\n} catch {\n  // carry on\n}\nexport default {};\n',
  );
});
after(() => fs.rmSync(workspace, { recursive: true, force: true }));

describe('process.exit while a module loads', { timeout: 300_000 }, () => {
  for (const args of [
    ['train', 'exits.ts'],
    ['run-tool', 'exits.ts', '--tool', 'search'],
    ['eval-reward', 'exits.ts', '--export', 'rewards'],
    ['serve-tools', 'exits.ts', '--port', '0'],
    ['train', 'catches.ts'],
  ]) {
    it(`${args.join(' ')}: a non-zero status and a message naming the file`, async () => {
      const result = await runCli(args, { cwd: workspace, timeoutMs: 60_000 });
      const said = `exit ${result.code} (${result.signal ?? 'no signal'})\nstderr:\n${result.stderr}`;
      assert.equal(result.signal, null, said);
      assert.equal(result.code, 1, said);
      const file = path.join(workspace, args[1]).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      assert.match(result.stderr, new RegExp(`${file} called process\\.exit\\(0\\) while loading`), said);
    });
  }
});
