import { TOOL_NAME_PATTERN, TOOL_NAME_RULE } from '../../contract/protocol/names';
import type { ToolContext } from '../tools/context';
import { ToolDefinitionError } from '../tools/toolErrors';
import type { ToolResult } from '../tools/result';
import type { JsonSchema, ParametersSchema } from '../tools/schema';
import { Tool } from '../tools/tool';
import { argumentsFromJsonSchema } from './argumentSchema';
import type { McpConnection, McpToolDescription } from './connection';
import { errorText, toToolResult, type McpContentBlock } from './content';

/** The server answered the call with `isError: true`; the message is the tool's own text. */
export class McpToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'McpToolError';
    // The tool's words are the whole story; a stack into the SDK would only bury them.
    this.stack = `${this.name}: ${message}`;
  }
}

/** The schema as a chat template shows it: the server's, without the dialect URL (as for our zod tools). */
function templateSchema(schema: McpToolDescription['inputSchema']): JsonSchema {
  const { $schema: _dialect, ...rest } = schema as JsonSchema;
  return rest;
}

/**
 * One tool of an MCP server, as a Tool the agent loop, the runner, Run Tool… and the rewards
 * treat like any other: the policy calls it by `name` (the server's name, with the server's
 * prefix), its arguments are checked against the server's JSON Schema (argumentSchema.ts), the
 * call goes to the server through the connection, the result's content becomes the observation,
 * and an error result, a thrown error or the runner's timeout become error observations.
 */
export class McpTool extends Tool {
  readonly name: string;
  readonly description: string;
  readonly parameters: ParametersSchema;
  private readonly inputSchema: JsonSchema;

  constructor(
    readonly connection: McpConnection,
    /** The tool's name on the server (what `tools/call` is sent with). */
    readonly remoteName: string,
    description: McpToolDescription,
  ) {
    super();
    const server = connection.server;
    this.name = `${server.prefix}${remoteName}`;
    if (!TOOL_NAME_PATTERN.test(this.name)) {
      throw new ToolDefinitionError(
        `${connection.description}: its tool "${remoteName}" cannot be called "${this.name}"; tool names use ${TOOL_NAME_RULE} (leave it out with the server's \`tools\` list)`,
      );
    }
    this.description =
      (description.description ?? description.title ?? '').trim() || `${remoteName} (from ${connection.description})`;
    this.inputSchema = templateSchema(description.inputSchema);
    this.parameters = argumentsFromJsonSchema(this.name, description.inputSchema as JsonSchema);
    this.timeoutMs = server.timeoutMs;
    this.concurrency = server.concurrency;
  }

  override jsonSchema(): JsonSchema {
    return this.inputSchema;
  }

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    // The runner's deadline aborts ctx.signal at timeoutMs; the SDK's own limit is only a backstop behind it.
    const result = await this.connection.callTool(this.remoteName, args, ctx.signal, this.timeoutMs * 2 + 1000);
    const content = (result.content ?? []) as McpContentBlock[];
    if (result.isError) throw new McpToolError(errorText(content));
    return toToolResult(content, result.structuredContent);
  }
}
