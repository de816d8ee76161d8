import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

/**
 * Pointers that stay true: a comment in shipped code that names a file (`*.ts`, `*.md`) names
 * one that exists — a path relative to the comment's file or to the repository, a path's tail
 * (`rollout/gateway/chatServer.ts`), or a bare file name somewhere in the repository. Files move;
 * this fails on the comments left pointing at where they were. Addresses (https://…) are not
 * checked, and a few names are examples of a user's or another tool's file, not pointers.
 */

const root = path.resolve(__dirname, '..', '..', '..');

/** Names that stand for files of a user's or another tool's, not for ours. */
const EXAMPLES = new Map([
  ['vite.config.ts', "another tool's config file, which also calls defineConfig"],
  ['evil.ts', 'the file a planted run.json names, in the attack a check refuses'],
]);

const FILE = /(?<![\w*@$<{/.-])((?:[\w-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|md))(?![\w/])/g;

function comments(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan())
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia)
      out.push({ text: scanner.getTokenText(), line: text.slice(0, scanner.getTokenStart()).split('\n').length });
  return out;
}

/** Each `file:line name` whose named file does not exist among `tracked`. */
export function stalePointers(files: ReadonlyMap<string, string>, tracked: readonly string[]): string[] {
  const all = new Set(tracked);
  const names = new Set(tracked.map((f) => path.posix.basename(f)));
  const exists = (from: string, name: string) =>
    name.includes('/')
      ? all.has(path.posix.normalize(path.posix.join(path.posix.dirname(from), name))) ||
        all.has(name) ||
        tracked.some((t) => t.endsWith(`/${name}`))
      : names.has(name) || EXAMPLES.has(name);
  const stale: string[] = [];
  for (const [file, text] of files)
    for (const comment of comments(text))
      for (const match of comment.text.matchAll(FILE)) {
        const before = comment.text.slice(0, match.index);
        if (/https?:\/\/\S*$/.test(before)) continue;
        if (!exists(file, match[1])) stale.push(`${file}:${comment.line} ${match[1]}`);
      }
  return stale;
}

describe('comments that name files', () => {
  it('name files that exist', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
    const shipped = tracked.filter(
      (f) => /^(trainer|extension|webview)\/.*\.ts$/.test(f) && fs.existsSync(path.join(root, f)),
    );
    const files = new Map(shipped.map((f) => [f, fs.readFileSync(path.join(root, f), 'utf8')]));
    assert.ok(files.size > 300, `read ${files.size} files`);
    assert.deepEqual(stalePointers(files, tracked), []);
  });

  it('the check catches a planted stale pointer, and passes real ones and addresses', () => {
    const tracked = ['trainer/a/one.ts', 'trainer/a/two.ts', 'trainer/b/README.md'];
    const planted = new Map([
      [
        'trainer/a/one.ts',
        [
          '/** Reads two.ts and ../b/README.md; see a/two.ts and https://example.com/x/three.ts. */',
          '// The session (session.ts) translates DAP.',
          "const s = 'gone.ts'; // a string in code, not a pointer",
        ].join('\n'),
      ],
    ]);
    assert.deepEqual(stalePointers(planted, tracked), ['trainer/a/one.ts:2 session.ts']);
  });
});
