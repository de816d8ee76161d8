/**
 * One gate for workspace code: every way extension/ can start a process or a debug launch goes
 * through extension/workspaceCode.ts (child processes) or extension/workspaceDebug.ts (debug
 * sessions), whose functions refuse in Restricted Mode before anything starts. A new spawn
 * anywhere else fails here — the attack pass that prompted this found two call sites (Re-roll,
 * the MCP tool list) that had started the trainer with no trust check at all.
 *
 * The scan reads each source's syntax tree (TypeScript's parser), so a type-only import of
 * `ChildProcess` passes and a `require('child_process')` does not. It is shown to catch planted
 * spawns of each kind, so a scan that quietly matches nothing fails too.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const EXTENSION = path.join(ROOT, 'extension');

/** The gate's modules: the only files allowed to start processes, each start behind the gate's check. */
const PROCESS_GATE = 'extension/workspaceCode.ts';
const DEBUG_GATE = 'extension/workspaceDebug.ts';
/** The check each gated start must make first. */
const GATE_CHECK = 'assertWorkspaceCodeAllowed';

const PROCESS_MODULES = new Set(['child_process', 'node:child_process', 'cluster', 'node:cluster']);
/** Modules that run code outside the extension host's own; nothing in extension/ needs them. */
const FORBIDDEN_MODULES = new Set(['worker_threads', 'node:worker_threads']);
/** VS Code API that starts a process or runs a program: tasks, terminals, executable debug adapters. */
const FORBIDDEN_API = new Set([
  'ProcessExecution',
  'ShellExecution',
  'CustomExecution',
  'DebugAdapterExecutable',
  'DebugAdapterServer',
  'DebugAdapterNamedPipeServer',
  'createTerminal',
  'executeTask',
]);

interface Finding {
  file: string;
  line: number;
  what: string;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

function moduleOf(node: ts.Node): string | undefined {
  if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
    const clause = node.importClause;
    const typeOnly =
      clause?.isTypeOnly ||
      (clause && !clause.name && clause.namedBindings && ts.isNamedImports(clause.namedBindings)
        ? clause.namedBindings.elements.every((e) => e.isTypeOnly)
        : false);
    return typeOnly ? undefined : node.moduleSpecifier.text;
  }
  if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier))
    return node.isTypeOnly ? undefined : node.moduleSpecifier.text;
  if (
    ts.isCallExpression(node) &&
    (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
      (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
    node.arguments[0] &&
    ts.isStringLiteral(node.arguments[0])
  )
    return node.arguments[0].text;
  return undefined;
}

/** The name a node refers to: `x` of `a.x`, `a['x']` or a bare `x`. */
function nameOf(node: ts.Node): string | undefined {
  if (ts.isPropertyAccessExpression(node)) return node.name.text;
  if (ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression))
    return node.argumentExpression.text;
  if (ts.isIdentifier(node)) return node.text;
  return undefined;
}

/** Process starts and debug launches in one source, as findings (file relative to the repository). */
export function scanSource(file: string, text: string): Finding[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const findings: Finding[] = [];
  const at = (node: ts.Node, what: string) =>
    findings.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, what });
  const visit = (node: ts.Node): void => {
    const module = moduleOf(node);
    if (module && PROCESS_MODULES.has(module)) at(node, `imports ${module}`);
    if (module && FORBIDDEN_MODULES.has(module)) at(node, `imports ${module}`);
    if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) {
      const name = nameOf(node);
      if (name === 'startDebugging') at(node, 'calls startDebugging');
      if (name && FORBIDDEN_API.has(name)) at(node, `uses ${name}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return findings;
}

/** Where each finding may stand: child processes in the process gate, debug launches in the debug gate; the rest nowhere. */
function allowed(finding: Finding): boolean {
  if (/^imports (node:)?child_process$/.test(finding.what)) return finding.file === PROCESS_GATE;
  if (finding.what === 'calls startDebugging') return finding.file === DEBUG_GATE;
  return false;
}

/** The gate module's own process starts that are not behind GATE_CHECK, as "function: call". */
export function ungatedStarts(text: string): string[] {
  const source = ts.createSourceFile(PROCESS_GATE, text, ts.ScriptTarget.Latest, true);
  const problems: string[] = [];
  const functionOf = (node: ts.Node): ts.FunctionLikeDeclaration | undefined => {
    for (let n: ts.Node | undefined = node.parent; n; n = n.parent) if (ts.isFunctionLike(n)) return n as never;
    return undefined;
  };
  const checksFirst = (fn: ts.FunctionLikeDeclaration | undefined): boolean => {
    const first = fn?.body && ts.isBlock(fn.body) ? fn.body.statements[0] : undefined;
    return (
      !!first &&
      ts.isExpressionStatement(first) &&
      ts.isCallExpression(first.expression) &&
      nameOf(first.expression.expression) === GATE_CHECK
    );
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      ts.isIdentifier(node.expression.expression) &&
      node.expression.expression.text === 'childProcess'
    ) {
      const fn = functionOf(node);
      if (!checksFirst(fn))
        problems.push(`${fn && 'name' in fn && fn.name ? fn.name.getText() : '(anonymous)'}: ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

function scanExtension(): Finding[] {
  return sourceFiles(EXTENSION).flatMap((full) =>
    scanSource(path.relative(ROOT, full).split(path.sep).join('/'), fs.readFileSync(full, 'utf8')),
  );
}

describe('one gate for workspace code', () => {
  it('nothing in extension/ starts a process or a debug launch except through the gate', () => {
    const findings = scanExtension();
    const ungated = findings.filter((f) => !allowed(f)).map((f) => `${f.file}:${f.line} ${f.what}`);
    assert.deepEqual(ungated, [], 'start it through extension/workspaceCode.ts or extension/workspaceDebug.ts');
    // The scan sees the gate's own starts: it is reading the sources, not matching nothing.
    assert.ok(findings.some((f) => f.file === PROCESS_GATE && /child_process/.test(f.what)));
    assert.ok(findings.some((f) => f.file === DEBUG_GATE && f.what === 'calls startDebugging'));
  });

  it('each process start in the gate checks trust first', () => {
    const text = fs.readFileSync(path.join(ROOT, PROCESS_GATE), 'utf8');
    assert.deepEqual(ungatedStarts(text), []);
    assert.ok(/childProcess\.spawn\(/.test(text) && /childProcess\.execFile\(/.test(text));
  });

  it('catches planted spawns of every kind', () => {
    const planted: Record<string, string> = {
      'import spawn': "import { spawn } from 'node:child_process';\nspawn('node', ['evil.ts']);",
      'import namespace': "import * as cp from 'child_process';\ncp.execFile('node', []);",
      require: "const cp = require('node:child_process');",
      'dynamic import': "void import('node:child_process');",
      startDebugging: "vscode.debug.startDebugging(undefined, { type: 'node', request: 'launch', name: 'x' });",
      'task execution': "new vscode.ProcessExecution('node', ['evil.ts']);",
      'shell execution': "new vscode.ShellExecution('node evil.ts');",
      'executable adapter': "new vscode.DebugAdapterExecutable('node', ['evil.ts']);",
      terminal: "vscode.window.createTerminal('x').sendText('node evil.ts');",
      worker: "import { Worker } from 'node:worker_threads';",
    };
    for (const [name, text] of Object.entries(planted)) {
      const findings = scanSource('extension/reroll/planted.ts', text);
      assert.ok(findings.length > 0 && findings.every((f) => !allowed(f)), `${name} is caught`);
    }
    const typeOnly = scanSource('extension/planted.ts', "import type { ChildProcess } from 'node:child_process';");
    assert.deepEqual(typeOnly, [], 'a type-only import starts nothing');
    const gate = fs.readFileSync(path.join(ROOT, PROCESS_GATE), 'utf8');
    const bypass = `${gate}\nexport function quietly(): void {\n  childProcess.spawn('node', ['evil.ts']);\n}\n`;
    assert.deepEqual(ungatedStarts(bypass), ["quietly: childProcess.spawn('node', ['evil.ts'])"]);
  });
});
