import * as ts from 'typescript';
import type { RewardKind, ToolSelector } from '../../trainer/contract/protocol/authoring';
import { EXPORT_PATH_PATTERN } from '../../trainer/contract/protocol/names';

/**
 * Finds, in one TypeScript source, what the code lenses go above: tools (Tool subclasses,
 * `defineTool(…)` calls, exported instances of imported tool classes), rewards (exported
 * OutcomeReward / ProcessReward / RewardConfig values, `exactMatch(…)`-style calls inside them,
 * exported `(trajectory: Trajectory, row) => number` functions) and training configs
 * (`export default defineConfig(…)`).
 *
 * It reads the syntax tree only (TypeScript's parser, no type checker, no other files): names
 * count when they are imported from 'rollout-studio', so a user's own `Tool` class does not
 * confuse it. For each it works out how the trainer can find the value at run time: the export
 * path (`tools[0]`, `rewards.outcome[0]`, `default.rewards`) or, for a class, its name.
 *
 * No `vscode` here: the extension loads this module (with TypeScript in it) from its own bundle
 * on first use, and unit tests run it directly.
 */

export interface SourcePosition {
  /** 0-based. */
  line: number;
  character: number;
}

export type Definition =
  | {
      kind: 'tool';
      at: SourcePosition;
      /** The class, the tool's name or the export, for titles and messages. */
      label: string;
      /** How run-tool finds it; absent when it cannot be reached from the module's exports. */
      selector?: ToolSelector;
    }
  | {
      kind: 'reward';
      at: SourcePosition;
      label: string;
      rewardKind: RewardKind;
      /** Absent when the value is not reachable from the module's exports. */
      exportPath?: string;
    }
  | { kind: 'config'; at: SourcePosition; label: string }
  /** A server of a config's `mcpServers`: its tools are run by the server's name (which tool is asked for). */
  | { kind: 'mcpServer'; at: SourcePosition; label: string; server: string };

const PACKAGE = 'rollout-studio';
const TOOL_CLASSES = new Set(['Tool', 'SearchTool', 'CalculatorTool', 'JavaScriptTool']);
const REWARD_FACTORIES = new Set(['exactMatch', 'f1', 'substringMatch', 'formatCheck', 'outcomeReward']);
const REWARD_TYPES: Record<string, RewardKind> = {
  OutcomeReward: 'outcome',
  ProcessReward: 'process',
  RewardConfig: 'config',
};

/** What the module imports from 'rollout-studio': local name → exported name, and namespace aliases. */
interface PackageImports {
  named: Map<string, string>;
  namespaces: Set<string>;
}

function packageImports(source: ts.SourceFile): PackageImports {
  const named = new Map<string, string>();
  const namespaces = new Set<string>();
  for (const statement of source.statements) {
    if (
      !ts.isImportDeclaration(statement) ||
      !ts.isStringLiteral(statement.moduleSpecifier) ||
      statement.moduleSpecifier.text !== PACKAGE
    )
      continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings) continue;
    if (ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
    else
      for (const element of bindings.elements)
        named.set(element.name.text, (element.propertyName ?? element.name).text);
  }
  return { named, namespaces };
}

/** The package export an expression or type name refers to (`Tool`, `rs.Tool`), if any. */
function packageName(node: ts.Node, imports: PackageImports): string | undefined {
  if (ts.isIdentifier(node)) return imports.named.get(node.text);
  if (
    (ts.isPropertyAccessExpression(node) || ts.isQualifiedName(node)) &&
    ts.isIdentifier(ts.isPropertyAccessExpression(node) ? node.expression : node.left)
  ) {
    const left = (ts.isPropertyAccessExpression(node) ? node.expression : node.left) as ts.Identifier;
    const right = ts.isPropertyAccessExpression(node) ? node.name : node.right;
    return imports.namespaces.has(left.text) ? right.text : undefined;
  }
  return undefined;
}

function hasExportModifier(node: ts.Node): boolean {
  return ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
}

/** `export { a, b as c }` and `export default a` of local names: local name → exported names. */
function exportAliases(source: ts.SourceFile): Map<string, string[]> {
  const aliases = new Map<string, string[]>();
  const add = (local: string, exported: string) => aliases.set(local, [...(aliases.get(local) ?? []), exported]);
  for (const statement of source.statements) {
    if (
      ts.isExportDeclaration(statement) &&
      !statement.moduleSpecifier &&
      statement.exportClause &&
      ts.isNamedExports(statement.exportClause)
    ) {
      for (const element of statement.exportClause.elements)
        add((element.propertyName ?? element.name).getText(source), element.name.getText(source));
    } else if (ts.isExportAssignment(statement) && !statement.isExportEquals && ts.isIdentifier(statement.expression)) {
      add(statement.expression.text, 'default');
    }
  }
  return aliases;
}

function unwrap(node: ts.Node): ts.Node {
  let current = node;
  while (
    current.parent &&
    (ts.isParenthesizedExpression(current.parent) ||
      ts.isAsExpression(current.parent) ||
      ts.isSatisfiesExpression(current.parent) ||
      ts.isNonNullExpression(current.parent))
  ) {
    current = current.parent;
  }
  return current;
}

/** An expression without the parentheses, `as`, `satisfies` and `!` around it. */
function inner(node: ts.Expression): ts.Expression {
  let current = node;
  while (
    ts.isParenthesizedExpression(current) ||
    ts.isAsExpression(current) ||
    ts.isSatisfiesExpression(current) ||
    ts.isNonNullExpression(current)
  )
    current = current.expression;
  return current;
}

/** Where a value's lens goes: its statement when it is a variable's value or the default export, else the value itself. */
function lensAnchor(node: ts.Node): ts.Node {
  const outer = unwrap(node);
  const parent = outer.parent;
  if (parent && ts.isVariableDeclaration(parent) && parent.initializer === outer)
    return ts.isVariableStatement(parent.parent.parent) ? parent.parent.parent : parent;
  if (parent && ts.isExportAssignment(parent)) return parent;
  return node;
}

function propertyKey(name: ts.PropertyName): string | undefined {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name)) return name.text;
  return undefined;
}

class SourceDefinitions {
  private readonly imports: PackageImports;
  private readonly aliases: Map<string, string[]>;
  private readonly localToolClasses = new Set<string>();
  readonly found: Definition[] = [];

  constructor(private readonly source: ts.SourceFile) {
    this.imports = packageImports(source);
    this.aliases = exportAliases(source);
  }

  private position(node: ts.Node): SourcePosition {
    const { line, character } = this.source.getLineAndCharacterOfPosition(node.getStart(this.source));
    return { line, character };
  }

  private isPackage(node: ts.Node, names: ReadonlySet<string> | string): boolean {
    const name = packageName(node, this.imports);
    return name !== undefined && (typeof names === 'string' ? name === names : names.has(name));
  }

  /** How the trainer reaches `node`'s value from the module's exports, or undefined. */
  exportPath(node: ts.Node): string | undefined {
    const segments: (string | number)[] = [];
    let current = unwrap(node);
    for (;;) {
      const parent = current.parent;
      if (!parent) return undefined;
      if (ts.isArrayLiteralExpression(parent)) {
        segments.unshift(parent.elements.indexOf(current as ts.Expression));
        current = unwrap(parent);
      } else if (ts.isPropertyAssignment(parent) && parent.initializer === current) {
        const key = propertyKey(parent.name);
        if (key === undefined) return undefined;
        segments.unshift(key);
        current = unwrap(parent.parent);
      } else if (
        ts.isCallExpression(parent) &&
        parent.arguments[0] === current &&
        this.isPackage(parent.expression, 'defineConfig')
      ) {
        current = unwrap(parent); // defineConfig returns its argument
      } else if (ts.isExportAssignment(parent) && !parent.isExportEquals) {
        segments.unshift('default');
        break;
      } else if (ts.isVariableDeclaration(parent) && parent.initializer === current && ts.isIdentifier(parent.name)) {
        const statement = parent.parent.parent;
        const local = parent.name.text;
        const exported =
          ts.isVariableStatement(statement) && hasExportModifier(statement) ? local : this.aliases.get(local)?.[0];
        if (exported === undefined) return undefined;
        segments.unshift(exported);
        break;
      } else {
        return undefined;
      }
    }
    const text = segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
    return EXPORT_PATH_PATTERN.test(text) ? text : undefined;
  }

  private addReward(node: ts.Node, label: string, kind: RewardKind, at: ts.Node = node): void {
    const exportPath = this.exportPath(node);
    this.found.push({
      kind: 'reward',
      at: this.position(at),
      label,
      rewardKind: kind,
      ...(exportPath ? { exportPath } : {}),
    });
  }

  /** `extends Tool`, `extends SearchTool`, `extends rs.Tool`, or a tool class of this file. */
  private isToolClass(node: ts.ClassLikeDeclaration): boolean {
    const heritage = node.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0]?.expression;
    if (!heritage) return false;
    if (this.isPackage(heritage, TOOL_CLASSES)) return true;
    if (ts.isIdentifier(heritage) && this.localToolClasses.has(heritage.text)) return true;
    // A base from elsewhere (the user's own): a class with `execute` and `parameters` is a tool.
    const members = new Set(node.members.map((m) => (m.name ? propertyKey(m.name as ts.PropertyName) : undefined)));
    return members.has('execute') && members.has('parameters');
  }

  private visitClass(node: ts.ClassDeclaration): void {
    if (!node.name || !this.isToolClass(node)) return;
    this.localToolClasses.add(node.name.text);
    const abstract = (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.AbstractKeyword);
    if (abstract) return;
    this.found.push({
      kind: 'tool',
      at: this.position(node),
      label: node.name.text,
      selector: { by: 'class', name: node.name.text },
    });
  }

  private visitCall(node: ts.CallExpression): void {
    const callee = packageName(node.expression, this.imports);
    if (callee === 'defineTool') {
      const path = this.exportPath(node);
      const definition = node.arguments[0] && inner(node.arguments[0]);
      const nameProperty =
        definition && ts.isObjectLiteralExpression(definition)
          ? definition.properties.find(
              (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && propertyKey(p.name) === 'name',
            )
          : undefined;
      const name =
        nameProperty && ts.isStringLiteralLike(nameProperty.initializer) ? nameProperty.initializer.text : undefined;
      const selector: ToolSelector | undefined = path
        ? { by: 'export', path }
        : name
          ? { by: 'name', name }
          : undefined;
      this.found.push({
        kind: 'tool',
        at: this.position(lensAnchor(node)),
        label: name ?? path ?? 'defineTool',
        ...(selector ? { selector } : {}),
      });
    } else if (callee !== undefined && REWARD_FACTORIES.has(callee)) {
      const path = this.exportPath(node);
      const kind: RewardKind = path?.split(/[.[]/).includes('process') ? 'process' : 'outcome';
      this.addReward(node, path ?? callee, kind, lensAnchor(node));
    } else if (callee === 'defineConfig') {
      const path = this.exportPath(node);
      if (path === 'default' || path === 'config')
        this.found.push({ kind: 'config', at: this.position(lensAnchor(node)), label: path });
      const argument = node.arguments[0] && inner(node.arguments[0]);
      if (argument && ts.isObjectLiteralExpression(argument)) {
        const rewards = argument.properties.find(
          (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && propertyKey(p.name) === 'rewards',
        );
        const literal = rewards && inner(rewards.initializer);
        if (literal && ts.isObjectLiteralExpression(literal)) this.visitRewardConfig(literal, rewards);
        this.visitMcpServers(argument);
      }
    }
  }

  /** A new instance of a tool class imported from elsewhere (`new CalculatorTool(…)`); classes of this file have their own lens. */
  private visitNew(node: ts.NewExpression): void {
    const imported = this.isPackage(node.expression, TOOL_CLASSES);
    if (!imported) return;
    const path = this.exportPath(node);
    if (!path) return;
    this.found.push({
      kind: 'tool',
      at: this.position(lensAnchor(node)),
      label: path,
      selector: { by: 'export', path },
    });
  }

  /** `mcpServers: { name: { … }, … }` in a config literal: a lens above each server. */
  private visitMcpServers(config: ts.ObjectLiteralExpression): void {
    const property = config.properties.find(
      (p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && propertyKey(p.name) === 'mcpServers',
    );
    const servers = property && inner(property.initializer);
    if (!servers || !ts.isObjectLiteralExpression(servers)) return;
    for (const server of servers.properties) {
      const name = ts.isPropertyAssignment(server) ? propertyKey(server.name) : undefined;
      if (name !== undefined)
        this.found.push({ kind: 'mcpServer', at: this.position(server), label: `MCP server ${name}`, server: name });
    }
  }

  /** A RewardConfig object literal: a lens for it, and for each inline reward in its outcome and process lists. */
  private visitRewardConfig(literal: ts.ObjectLiteralExpression, at: ts.Node): void {
    this.addReward(literal, this.exportPath(literal) ?? 'rewards', 'config', at);
    for (const property of literal.properties) {
      if (!ts.isPropertyAssignment(property) || !ts.isArrayLiteralExpression(property.initializer)) continue;
      const list = propertyKey(property.name);
      if (list !== 'outcome' && list !== 'process') continue;
      for (const element of property.initializer.elements) {
        // Calls of reward factories are found by visitCall; identifiers have a lens where they are declared.
        if (ts.isObjectLiteralExpression(element))
          this.addReward(element, this.exportPath(element) ?? `${list} reward`, list);
      }
    }
  }

  private visitVariable(node: ts.VariableDeclaration): void {
    if (!ts.isIdentifier(node.name) || !node.initializer) return;
    const typeNode = node.type ?? (ts.isSatisfiesExpression(node.initializer) ? node.initializer.type : undefined);
    const typeName =
      typeNode && ts.isTypeReferenceNode(typeNode) ? packageName(typeNode.typeName, this.imports) : undefined;
    const kind = typeName ? REWARD_TYPES[typeName] : undefined;
    const initializer = inner(node.initializer);
    if (kind === 'config' && ts.isObjectLiteralExpression(initializer)) {
      this.visitRewardConfig(initializer, node.parent.parent);
    } else if (kind) {
      const statement = node.parent.parent;
      this.addReward(initializer, node.name.text, kind, statement);
    } else if (
      (ts.isArrowFunction(initializer) || ts.isFunctionExpression(initializer)) &&
      this.takesTrajectory(initializer)
    ) {
      this.addReward(initializer, node.name.text, 'function', node.parent.parent);
    }
  }

  /** `(trajectory: Trajectory<…>, row…) => …`: a plain outcome-reward function. */
  private takesTrajectory(fn: ts.SignatureDeclaration): boolean {
    const type = fn.parameters[0]?.type;
    return type !== undefined && ts.isTypeReferenceNode(type) && this.isPackage(type.typeName, 'Trajectory');
  }

  private visitFunction(node: ts.FunctionDeclaration): void {
    if (!node.name || !node.body || !this.takesTrajectory(node)) return;
    const exported = hasExportModifier(node) ? node.name.text : this.aliases.get(node.name.text)?.[0];
    const isDefault = (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
    const exportPath = isDefault ? 'default' : exported;
    this.found.push({
      kind: 'reward',
      at: this.position(node),
      label: node.name.text,
      rewardKind: 'function',
      ...(exportPath ? { exportPath } : {}),
    });
  }

  visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node)) this.visitClass(node);
    else if (ts.isCallExpression(node)) this.visitCall(node);
    else if (ts.isNewExpression(node)) this.visitNew(node);
    else if (ts.isVariableDeclaration(node)) this.visitVariable(node);
    else if (ts.isFunctionDeclaration(node)) this.visitFunction(node);
    ts.forEachChild(node, this.visit);
  };
}

/** Whether a document is worth parsing: code lenses only concern modules that import the package. */
export function mentionsPackage(text: string): boolean {
  return text.includes(PACKAGE);
}

/** Every definition of the source, in source order. */
export function findDefinitions(text: string, fileName = 'file.ts'): Definition[] {
  if (!mentionsPackage(text)) return [];
  const source = ts.createSourceFile(
    fileName,
    text,
    ts.ScriptTarget.Latest,
    true,
    fileName.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const definitions = new SourceDefinitions(source);
  definitions.visit(source);
  // One lens row per place: a RewardConfig found twice (declared and as a defineConfig property) is listed once.
  const seen = new Set<string>();
  return definitions.found
    .filter((d) => {
      const key = `${d.kind}:${d.at.line}:${d.at.character}:${d.label}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.at.line - b.at.line || a.at.character - b.at.character);
}
