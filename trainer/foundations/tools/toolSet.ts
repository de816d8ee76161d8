import { TOOL_NAME_PATTERN, TOOL_NAME_RULE } from '../../contract/protocol/authoring';
import type { ToolSpec } from '../../contract/protocol/chatMessages';
import { ToolDefinitionError } from './toolErrors';
import { isZodObjectSchema } from './schema';
import { Tool } from './tool';

/**
 * The tools of a run, checked once up front: every definition error (a bad name, a missing
 * description, a schema that is not a zod object or cannot become JSON Schema, a bad limit, two
 * tools with one name) is reported before any rollout starts, naming the tool and the field.
 */
export class ToolSet {
  readonly tools: readonly Tool[];
  private readonly byName: Map<string, Tool>;

  constructor(tools: readonly Tool[]) {
    this.byName = new Map();
    tools.forEach((tool, i) => {
      checkTool(tool, i);
      const existing = this.byName.get(tool.name);
      if (existing) {
        throw new ToolDefinitionError(
          `two tools are named "${tool.name}" (${className(existing)} and ${className(tool)}); tool names must be unique`,
        );
      }
      this.byName.set(tool.name, tool);
    });
    this.tools = [...tools];
  }

  get(name: string): Tool | undefined {
    return this.byName.get(name);
  }

  get names(): string[] {
    return this.tools.map((t) => t.name);
  }

  /** What the chat template receives as `tools`, in the order the tools were given. */
  specs(): ToolSpec[] {
    return this.tools.map((t) => t.spec());
  }
}

function className(tool: object): string {
  return tool.constructor?.name || 'an anonymous class';
}

function checkTool(tool: unknown, position: number): asserts tool is Tool {
  if (!(tool instanceof Tool)) {
    const seen = typeof tool === 'object' && tool !== null ? `an instance of ${className(tool)}` : typeof tool;
    throw new ToolDefinitionError(
      `tools[${position}] is ${seen}, not a Tool; tools extend Tool (or come from defineTool) imported from 'rollout-studio'`,
    );
  }
  const label =
    typeof tool.name === 'string' && tool.name
      ? `tool "${tool.name}" (${className(tool)})`
      : `tools[${position}] (${className(tool)})`;
  if (typeof tool.name !== 'string' || !TOOL_NAME_PATTERN.test(tool.name)) {
    throw new ToolDefinitionError(`${label}: name ${JSON.stringify(tool.name)} is not valid; use ${TOOL_NAME_RULE}`);
  }
  if (typeof tool.description !== 'string' || tool.description.trim() === '') {
    throw new ToolDefinitionError(
      `${label}: description must be a non-empty string (the model reads it to decide when to call the tool)`,
    );
  }
  if (!isZodObjectSchema(tool.parameters)) {
    throw new ToolDefinitionError(
      `${label}: parameters must be a zod object schema, e.g. z.object({ query: z.string() })`,
    );
  }
  for (const [field, value, integer] of [
    ['timeoutMs', tool.timeoutMs, false],
    ['concurrency', tool.concurrency, true],
    ['maxBatchSize', tool.maxBatchSize, true],
  ] as const) {
    if (typeof value !== 'number' || !(value > 0) || (integer && !Number.isInteger(value) && value !== Infinity)) {
      throw new ToolDefinitionError(
        `${label}: ${field} must be a positive ${integer ? 'integer' : 'number'}, got ${String(value)}`,
      );
    }
  }
  if (tool.isolation !== 'worker' && tool.isolation !== 'trainer')
    throw new ToolDefinitionError(
      `${label}: isolation must be "worker" or "trainer", got ${JSON.stringify(tool.isolation)}`,
    );
  if (typeof tool.execute !== 'function') throw new ToolDefinitionError(`${label}: execute must be a method`);
  if (tool.executeBatch !== undefined && typeof tool.executeBatch !== 'function')
    throw new ToolDefinitionError(`${label}: executeBatch must be a method when defined`);
  if (tool.reward !== undefined && typeof tool.reward !== 'function')
    throw new ToolDefinitionError(`${label}: reward must be a method when defined`);
  tool.jsonSchema(); // throws a ToolDefinitionError when the schema cannot be converted
}
