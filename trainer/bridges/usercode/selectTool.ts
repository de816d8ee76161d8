import type { ToolSelector } from '../../contract/protocol/authoring';
import { UserCodeError } from '../../foundations/tools/toolErrors';
import { describeThrown } from '../../foundations/tools/runner';
import { Tool } from '../../foundations/tools/tool';
import { resolveExportPath } from './exportPath';

/**
 * Finds the one tool a command asks for in a loaded user module: by where it is exported
 * (`tools[0]`), by the name the policy calls it (`search`), or by its class (the code lens over
 * `class KnowledgeBaseSearch extends SearchTool` asks for an instance of that class). Errors
 * name the file and list what the module does export.
 */

type ToolClass = abstract new (...args: never[]) => Tool;

function isToolClass(value: unknown): value is ToolClass {
  return (
    typeof value === 'function' && (value === Tool || (value as { prototype?: unknown }).prototype instanceof Tool)
  );
}

/** Every Tool instance among the exports and in exported arrays (`export const tools = [..]`), once each. */
export function exportedTools(exports: Record<string, unknown>): Tool[] {
  const found = new Set<Tool>();
  for (const value of Object.values(exports)) {
    for (const item of Array.isArray(value) ? value : [value]) if (item instanceof Tool) found.add(item);
  }
  // A training config (`export default defineConfig({ tools: [...] })`) holds its tools in `tools`: `run-tool CONFIG --tool NAME` finds them.
  for (const config of [exports['default'], exports['config']]) {
    const tools =
      typeof config === 'object' && config !== null && !(config instanceof Tool)
        ? (config as { tools?: unknown }).tools
        : undefined;
    if (Array.isArray(tools)) for (const item of tools) if (item instanceof Tool) found.add(item);
  }
  return [...found];
}

/** The names of the classes from the instance's own class up to (not including) Tool. */
function classChain(tool: Tool): string[] {
  const names: string[] = [];
  for (
    let proto = Object.getPrototypeOf(tool);
    proto && proto !== Tool.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    names.push((proto.constructor as { name?: string }).name ?? '');
  }
  return names;
}

function listTools(tools: readonly Tool[]): string {
  return tools.length ? tools.map((t) => `"${t.name}" (${t.constructor.name})`).join(', ') : 'none';
}

function byClass(exports: Record<string, unknown>, className: string, file: string): Tool {
  const tools = exportedTools(exports);
  const exact = tools.filter((t) => t.constructor.name === className);
  const inherited = tools.filter((t) => classChain(t).includes(className));
  const matches = exact.length ? exact : inherited;
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    throw new UserCodeError(
      `${file}: exports ${matches.length} instances of ${className} (${listTools(matches)}); run one by its name instead`,
    );
  }
  // No instance: an exported class whose constructor needs nothing can be made here.
  const exportedClass = Object.values(exports).find((v): v is ToolClass => isToolClass(v) && v.name === className);
  const hint = `export an instance: export const tool = new ${className}(…)`;
  if (!exportedClass)
    throw new UserCodeError(`${file}: exports no instance of ${className} (its tools: ${listTools(tools)}); ${hint}`);
  try {
    const made = new (exportedClass as unknown as new () => unknown)();
    if (made instanceof Tool) return made;
  } catch (error) {
    throw new UserCodeError(
      `${file}: exports no instance of ${className}, and new ${className}() threw: ${describeThrown(error).split('\n')[0]}; ${hint}`,
    );
  }
  throw new UserCodeError(`${file}: new ${className}() did not make a Tool; ${hint}`);
}

export function selectTool(exports: Record<string, unknown>, selector: ToolSelector, file: string): Tool {
  switch (selector.by) {
    case 'export': {
      const value = resolveExportPath(exports, selector.path, file);
      if (value instanceof Tool) return value;
      if (isToolClass(value))
        throw new UserCodeError(
          `${file}: ${selector.path} is the class ${value.name}, not a tool; export an instance: new ${value.name}(…)`,
        );
      throw new UserCodeError(`${file}: ${selector.path} is ${value === null ? 'null' : typeof value}, not a Tool`);
    }
    case 'name': {
      const tools = exportedTools(exports);
      const tool = tools.find((t) => t.name === selector.name);
      if (!tool)
        throw new UserCodeError(`${file}: exports no tool named "${selector.name}" (its tools: ${listTools(tools)})`);
      return tool;
    }
    case 'class':
      return byClass(exports, selector.name, file);
    case 'mcp':
      // An MCP tool lives in a server process, not in the module: run-tool starts the server (authoring/mcpTools.ts).
      throw new UserCodeError(
        `${file}: the tool "${selector.tool}" of MCP server "${selector.server}" is not an export; open the module's MCP servers to reach it`,
      );
  }
}
