/**
 * The habits `npm test` enforces before anything else runs (test/run-all.sh's first stages):
 * typescript-eslint's rules (type-aware promise rules on shipped code), one import per module and a
 * function-length limit (`npm run lint`, .build/eslint.config.mjs), Prettier's format
 * (.prettierrc.json), and a tsconfig per runtime — webview code type-checks
 * against the DOM without Node, trainer and extension code against Node without the DOM. Each
 * check is shown to catch a planted mistake, so a configuration that quietly checks nothing fails
 * here.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..', '..');

// The planted files are not on disk, so no tsconfig.json's program holds them: for the typed
// rules, they are checked in the project service's default project (the root tsconfig.json's options).
const PLANTED = ['trainer/planted.ts', 'webview/planted.ts', 'extension/planted.ts'];

async function lint(file: string, text: string): Promise<string[]> {
  const { ESLint } = await import('eslint');
  const eslint = new ESLint({
    cwd: ROOT,
    overrideConfigFile: path.join(ROOT, '.build/eslint.config.mjs'),
    overrideConfig: {
      files: PLANTED,
      languageOptions: { parserOptions: { project: false, projectService: { allowDefaultProject: PLANTED } } },
    },
  });
  const [result] = await eslint.lintText(text, { filePath: path.join(ROOT, file) });
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

async function formatted(file: string, text: string): Promise<boolean> {
  const prettier = await import('prettier');
  const options = await prettier.resolveConfig(path.join(ROOT, file), { editorconfig: false });
  return prettier.check(text, { ...options, filepath: path.join(ROOT, file) });
}

/** Type errors of `text` as a file of `folder`, under that folder's tsconfig.json. */
function typeErrors(folder: string, text: string): string[] {
  const configFile = path.join(ROOT, folder, 'tsconfig.json');
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(configFile));
  const file = path.join(ROOT, folder, '__planted__.ts');
  const host = ts.createCompilerHost(parsed.options);
  const readFile = host.readFile;
  host.readFile = (name) => (path.resolve(name) === file ? text : readFile(name));
  host.fileExists = (
    (exists) => (name: string) =>
      path.resolve(name) === file || exists(name)
  )(host.fileExists);
  const program = ts.createProgram([file], parsed.options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('lint, format and per-runtime type checks', () => {
  it('npm test lints and type-checks every runtime before the first test suite', () => {
    const script = fs.readFileSync(path.join(ROOT, 'test/run-all.sh'), 'utf8');
    const at = (text: string) => script.indexOf(text);
    assert.ok(at('npm run -s lint') > 0 && at('npm run -s lint') < at('npm run -s typecheck'), 'lint first');
    assert.ok(at('npm run -s typecheck') < at('test/unit'), 'type check before the unit tests');
    const scripts = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts as Record<
      string,
      string
    >;
    for (const runtime of ['trainer', 'extension', 'webview'])
      assert.match(scripts.typecheck, new RegExp(`tsc -p ${runtime}\\b`));
    assert.match(scripts.lint, /eslint -c \.build\/eslint\.config\.mjs \. && prettier --check/);
  });

  it('ESLint fails a planted lint error', async () => {
    const messages = await lint('trainer/planted.ts', 'export function f(): number {\n  let x = 1;\n  return x;\n}\n');
    assert.deepEqual(messages, ["prefer-const: 'x' is never reassigned. Use 'const' instead."]);
  });

  it('ESLint fails a planted over-long function in shipped code, and only there', async () => {
    const body = Array.from({ length: 81 }, (_, i) => `  total += ${i};`).join('\n');
    const long = `export function f(): number {\n  let total = 0;\n${body}\n  return total;\n}\n`;
    const inTrainer = await lint('trainer/planted.ts', long);
    assert.equal(inTrainer.length, 1);
    assert.match(
      inTrainer[0],
      /^max-lines-per-function: Function 'f' has too many lines \(85\)\. Maximum allowed is 80\./,
    );
    assert.deepEqual(await lint('webview/planted.ts', long).then((m) => m.length), 1);
    assert.deepEqual(await lint('test/unit/planted.test.ts', long), [], 'tests are not held to it');
    const eighty = `export function f(): number {\n  let total = 0;\n${body.split('\n').slice(5).join('\n')}\n  return total;\n}\n`;
    assert.deepEqual(await lint('trainer/planted.ts', eighty), [], 'a function of exactly 80 lines passes');
    const blankAndComments = `export function f(): number {\n${'  // why\n\n'.repeat(90)}  return 1;\n}\n`;
    assert.deepEqual(await lint('trainer/planted.ts', blankAndComments), [], 'blank lines and comments do not count');
  });

  it('ESLint fails a planted floating or misused promise in shipped code, and a duplicate import', async () => {
    const floating = 'async function save(): Promise<void> {}\nexport function f(): void {\n  save();\n}\n';
    assert.deepEqual(
      (await lint('trainer/planted.ts', floating)).map((m) => m.split(':')[0]),
      ['@typescript-eslint/no-floating-promises'],
    );
    const handled = 'async function save(): Promise<void> {}\nexport function f(): void {\n  void save();\n}\n';
    assert.deepEqual(await lint('trainer/planted.ts', handled), [], 'a promise marked as ignored passes');
    const misused = 'export function f(run: () => Promise<void>): void {\n  setTimeout(run, 1);\n}\n';
    assert.deepEqual(
      (await lint('extension/planted.ts', misused)).map((m) => m.split(':')[0]),
      ['@typescript-eslint/no-misused-promises'],
    );
    const awaited = 'export async function f(): Promise<number> {\n  return await 1;\n}\n';
    assert.deepEqual(
      (await lint('webview/planted.ts', awaited)).map((m) => m.split(':')[0]),
      ['@typescript-eslint/await-thenable'],
    );
    const duplicate =
      "import { readFileSync } from 'node:fs';\nimport { statSync } from 'node:fs';\nexport const f = [readFileSync, statSync];\n";
    assert.deepEqual(await lint('trainer/planted.ts', duplicate), [
      "no-duplicate-imports: 'node:fs' import is duplicated.",
    ]);
    assert.deepEqual(
      await lint('test/unit/planted.test.ts', duplicate),
      ["no-duplicate-imports: 'node:fs' import is duplicated."],
      'tests too',
    );
  });

  it("ESLint fails the tests' #trainer/ alias in shipped code, and only there", async () => {
    const aliased = "import { formatBytes } from '#trainer/contract/formatBytes';\nexport const f = formatBytes;\n";
    assert.deepEqual(
      (await lint('extension/planted.ts', aliased)).map((m) => m.split(':')[0]),
      ['no-restricted-imports'],
    );
    assert.deepEqual(await lint('test/unit/planted.test.ts', aliased), [], 'tests import the trainer through it');
  });

  it('Prettier fails a planted format difference', async () => {
    assert.equal(await formatted('trainer/planted.ts', "export const x = { a: 1, b: 'two' };\n"), true);
    assert.equal(await formatted('trainer/planted.ts', 'export const x = {a:1, b:"two"}\n'), false);
    const wide = `export const x = [${Array.from({ length: 30 }, (_, i) => `'item${i}'`).join(', ')}];\n`;
    assert.equal(await formatted('trainer/planted.ts', wide), false, 'a line over 120 characters');
  });

  it('webview code has the DOM and not Node; trainer and extension code have Node and not the DOM', () => {
    const node =
      "import * as fs from 'node:fs';\nexport const size = fs.statSync('x').size + Buffer.byteLength('x');\n";
    const dom = 'export const title = document.title + window.location.href;\n';
    assert.deepEqual(typeErrors('webview', dom), []);
    assert.ok(typeErrors('webview', node).some((e) => /Cannot find (module 'node:fs'|name 'Buffer')/.test(e)));
    for (const runtime of ['trainer', 'extension']) {
      assert.deepEqual(typeErrors(runtime, node), [], runtime);
      assert.ok(
        typeErrors(runtime, dom).some((e) => /Cannot find name '(document|window)'/.test(e)),
        `${runtime} has no DOM`,
      );
    }
    assert.deepEqual(
      typeErrors('extension', "import * as vscode from 'vscode';\nexport const v = vscode.version;\n"),
      [],
    );
  });
});
