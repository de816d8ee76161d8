import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

/**
 * The training loop reads top to bottom: no function in trainer/pipeline/training/ (its stage
 * folders included) longer than 60 lines (the step is named stages, each a small function — see
 * trainingStep.ts).
 */

const root = path.resolve(__dirname, '..', '..', '..');
const LIMIT = 60;

function longFunctions(fileName: string, text: string, limit: number): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node) ||
      ts.isConstructorDeclaration(node)
    ) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > limit) {
        const name = (node as ts.FunctionDeclaration).name?.getText(source) ?? '(anonymous)';
        found.push(`${fileName}:${first + 1} ${name}: ${lines} lines`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('the training loop', () => {
  it(`has no function longer than ${LIMIT} lines`, () => {
    const dir = path.join(root, 'trainer', 'pipeline', 'training');
    // The stages' folders too (run/, step/, health/, …).
    const files = (fs.readdirSync(dir, { recursive: true }) as string[])
      .map((f) => f.split(path.sep).join('/'))
      .filter((f) => f.endsWith('.ts'));
    assert.ok(
      files.includes('trainingStep.ts'),
      'trainer/pipeline/training/trainingStep.ts is where a training step happens',
    );
    const long = files.flatMap((f) =>
      longFunctions(`trainer/pipeline/training/${f}`, fs.readFileSync(path.join(dir, f), 'utf8'), LIMIT),
    );
    assert.deepEqual(long, []);
  });

  it('the length check sees a long function', () => {
    const body = Array.from({ length: LIMIT + 5 }, (_, i) => `  const x${i} = ${i};`).join('\n');
    assert.equal(longFunctions('planted.ts', `export function planted() {\n${body}\n}\n`, LIMIT).length, 1);
  });
});
