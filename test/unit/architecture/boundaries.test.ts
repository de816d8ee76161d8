import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';

/**
 * The architecture's boundaries (.dependency-cruiser.cjs, checked with dependency-cruiser): the
 * trainer's rooms depend in one direction, the extension reaches the trainer only through
 * trainer/contract and never reaches a native module, the trainer never imports vscode, and there
 * are no import cycles. The first test holds the real tree to them; the second plants one
 * violation of each kind in a scratch tree and checks that each is caught by its rule.
 */

const root = path.resolve(__dirname, '..', '..', '..');
const requireHere = createRequire(__filename);
const config = requireHere(path.join(root, '.dependency-cruiser.cjs'));

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: unknown[];
}

async function cruiseViolations(cwd: string, folders: string[], tsConfig?: string): Promise<Violation[]> {
  const { cruise } = await import('dependency-cruiser');
  const previous = process.cwd();
  process.chdir(cwd);
  try {
    const options = {
      ...config.options,
      ...(tsConfig ? { tsConfig: { fileName: tsConfig } } : { tsConfig: undefined }),
      validate: true,
      ruleSet: { forbidden: config.forbidden },
    };
    const result = await cruise(folders, options);
    const output = result.output as { summary: { violations: Violation[] } };
    return output.summary.violations;
  } finally {
    process.chdir(previous);
  }
}

function describeViolations(violations: Violation[]): string {
  return violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).join('\n');
}

describe('architecture boundaries (dependency-cruiser)', () => {
  it('the repository keeps them: no violation in trainer/, extension/ or webview/', async () => {
    const violations = await cruiseViolations(root, ['trainer', 'extension', 'webview'], 'tsconfig.json');
    assert.equal(violations.length, 0, `boundary violations:\n${describeViolations(violations)}`);
  });

  describe('a planted violation of each kind is caught by its rule', () => {
    let scratch: string;
    before(() => {
      scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-boundaries-'));
      // Real packages, so that imports of onnxruntime-node and vscode's types resolve as they do here.
      fs.symlinkSync(path.join(root, 'node_modules'), path.join(scratch, 'node_modules'), 'dir');
      const files: Record<string, string> = {
        // The extension imports the engine directly, and reaches onnxruntime through a contract module.
        'extension/planted.ts': "import '../trainer/foundations/engine/graph';\nimport '../trainer/contract/leak';\n",
        'trainer/foundations/engine/graph.ts': 'export const graph = 1;\n',
        'trainer/contract/leak.ts': "import 'onnxruntime-node';\nexport const leak = 1;\n",
        // A foundation (models) imports the pipeline (training), which imports vscode.
        'trainer/foundations/models/model.ts': "import '../../pipeline/training/loop';\nexport const model = 1;\n",
        'trainer/pipeline/training/loop.ts': "import 'vscode';\nexport const loop = 1;\n",
        // A stage of the pipeline (rollout) imports a later one (rewards).
        'trainer/pipeline/rollout/early.ts': "import '../rewards/later';\nexport const early = 1;\n",
        'trainer/pipeline/rewards/later.ts': 'export const later = 1;\n',
        // An import cycle inside one room.
        'trainer/pipeline/rollout/a.ts': "import './b';\nexport const a = 1;\n",
        'trainer/pipeline/rollout/b.ts': "import './a';\nexport const b = 1;\n",
        // The webview imports a trainer module that is not the protocol.
        'webview/app.ts': "import '../trainer/foundations/models/model';\n",
        // Shipped code imports a test helper.
        'trainer/foundations/data/helper.ts': "import '../../../test/helpers/fixture';\n",
        'test/helpers/fixture.ts': 'export const fixture = 1;\n',
      };
      for (const [file, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(scratch, file)), { recursive: true });
        fs.writeFileSync(path.join(scratch, file), text);
      }
    });
    after(() => fs.rmSync(scratch, { recursive: true, force: true }));

    it('names every planted violation and nothing else', async () => {
      const violations = await cruiseViolations(scratch, ['trainer', 'extension', 'webview', 'test']);
      const found = new Set(violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`));
      const expected = [
        'extension-imports-only-trainer-contract: extension/planted.ts → trainer/foundations/engine/graph.ts',
        'extension-never-reaches-native-modules-or-engine: extension/planted.ts → trainer/foundations/engine/graph.ts',
        'trainer-models-imports-only-engine-contract: trainer/foundations/models/model.ts → trainer/pipeline/training/loop.ts',
        'trainer-rollout-imports-only-models-tools-data-http-contract: trainer/pipeline/rollout/early.ts → trainer/pipeline/rewards/later.ts',
        'shipped-code-never-imports-tests: trainer/foundations/data/helper.ts → test/helpers/fixture.ts',
        'webview-imports-only-the-protocol: webview/app.ts → trainer/foundations/models/model.ts',
      ];
      for (const line of expected) assert.ok(found.has(line), `not caught: ${line}\ncaught:\n${[...found].join('\n')}`);
      const ruleNames = new Set(violations.map((v) => v.rule.name));
      // Reached through trainer/contract/leak.ts: the path, not a direct import, is what is forbidden.
      assert.ok(
        violations.some(
          (v) => v.rule.name === 'extension-never-reaches-native-modules-or-engine' && /onnxruntime-node/.test(v.to),
        ),
        `onnxruntime-node reached through a contract module was not caught:\n${describeViolations(violations)}`,
      );
      assert.ok(
        ruleNames.has('trainer-never-imports-vscode'),
        `the vscode import was not caught:\n${describeViolations(violations)}`,
      );
      assert.ok(
        violations.some(
          (v) => v.rule.name === 'no-import-cycles' && /trainer\/pipeline\/rollout\/(a|b)\.ts/.test(v.from),
        ),
        `the cycle was not caught:\n${describeViolations(violations)}`,
      );
    });
  });
});
