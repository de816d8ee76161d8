import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Names that say what they hold: no two source files share a name (bar each room's `index.ts`
 * and each app's `main.ts`, which are entry points by convention), and no two modules export a
 * declaration of the same name — two `config.ts` or two `summarizeRun`s for different things
 * send a reader to the wrong one.
 */

const root = path.resolve(__dirname, '..', '..', '..');
const SHIPPED = ['trainer', 'extension', 'webview'];
const ENTRY_POINT_NAMES = new Set(['index.ts', 'main.ts']);

function sourceFiles(): string[] {
  return SHIPPED.flatMap((dir) =>
    (fs.readdirSync(path.join(root, dir), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join(dir, f)),
  );
}

function duplicates(entries: Array<[key: string, where: string]>): string[] {
  const byKey = new Map<string, string[]>();
  for (const [key, where] of entries) byKey.set(key, [...(byKey.get(key) ?? []), where]);
  return [...byKey].filter(([, places]) => places.length > 1).map(([key, places]) => `${key}: ${places.join(', ')}`);
}

const EXPORTED_DECLARATION =
  /^export (?:declare )?(?:async )?(?:abstract )?(function\*?|class|const|let|interface|type|enum) ([A-Za-z_$][\w$]*)/gm;

describe('names', () => {
  it('no two source files share a name (index.ts and main.ts excepted)', () => {
    const files = sourceFiles().filter((f) => !ENTRY_POINT_NAMES.has(path.basename(f)));
    assert.deepEqual(duplicates(files.map((f) => [path.basename(f), f])), []);
  });

  it('no two modules export a declaration of the same name', () => {
    const entries: Array<[string, string]> = [];
    for (const file of sourceFiles()) {
      const text = fs.readFileSync(path.join(root, file), 'utf8');
      for (const match of text.matchAll(EXPORTED_DECLARATION)) {
        // A zod schema and its inferred type share a name on purpose (`export const X = z…; export type X = z.infer<…>`).
        entries.push([`${match[2]}${match[1] === 'type' || match[1] === 'interface' ? ' (type)' : ''}`, file]);
      }
    }
    const values = new Map(entries.filter(([k]) => !k.endsWith(' (type)')).map(([k, f]) => [k, f]));
    const clashes = duplicates(
      entries.filter(([k, f]) => !(k.endsWith(' (type)') && values.get(k.slice(0, -' (type)'.length)) === f)),
    );
    assert.deepEqual(clashes, []);
  });

  it('the check sees a clash when there is one (a planted duplicate in the matcher)', () => {
    const planted = 'export function summarizeRun() {}\nexport const other = 1;\n';
    const names = [...planted.matchAll(EXPORTED_DECLARATION)].map((m) => m[2]);
    assert.deepEqual(names, ['summarizeRun', 'other']);
    assert.deepEqual(
      duplicates([
        ['summarizeRun', 'a.ts'],
        ['summarizeRun', 'b.ts'],
        ['other', 'a.ts'],
      ]),
      ['summarizeRun: a.ts, b.ts'],
    );
  });
});
