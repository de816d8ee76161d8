import { McpConnection, type McpConnectionOptions } from './connection';
import type { McpServersConfig } from './mcpConfig';
import { McpTool } from './mcpTool';

/**
 * The MCP servers of a run, started together and stopped together: each server's connection,
 * and its tools (those its `tools` list keeps, in the order the server lists them) as Tools.
 */
export class McpServers {
  private constructor(
    readonly connections: readonly McpConnection[],
    readonly tools: readonly McpTool[],
  ) {}

  /**
   * Starts every server (in parallel) and lists its tools. If one fails, the others are stopped
   * and the error names the server. A server's `tools` entry it does not have is an error too:
   * a typo must not silently train without the tool.
   */
  static async open(servers: McpServersConfig, options: McpConnectionOptions): Promise<McpServers> {
    const connections = Object.entries(servers).map(([name, server]) => new McpConnection(name, server, options));
    try {
      const listed = await Promise.all(connections.map((c) => c.start()));
      const tools = connections.flatMap((connection, i) => {
        const wanted = connection.server.tools;
        const available = listed[i];
        if (wanted) {
          const missing = wanted.filter((name) => !available.some((t) => t.name === name));
          if (missing.length) {
            throw new Error(
              `${connection.description} has no tool named ${missing.map((m) => `"${m}"`).join(', ')}; it lists: ${available.map((t) => t.name).join(', ') || '(none)'}`,
            );
          }
        }
        return available
          .filter((t) => !wanted || wanted.includes(t.name))
          .map((t) => new McpTool(connection, t.name, t));
      });
      return new McpServers(connections, tools);
    } catch (error) {
      await Promise.all(connections.map((c) => c.close()));
      throw error;
    }
  }

  static none(): McpServers {
    return new McpServers([], []);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }
}
