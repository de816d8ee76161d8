import * as path from 'node:path';
import { describeIssues } from '../../contract/protocol/parse';
import { McpServersConfig } from '../../foundations/mcp/mcpConfig';
import { McpServers } from '../../foundations/mcp/servers';
import { UserCodeError } from '../../foundations/tools/toolErrors';

/**
 * Run Tool… on MCP tools: the MCP servers a module declares — a training config's
 * `mcpServers` (its default export or `config`), or an exported `mcpServers` object — started
 * as a run would start them (relative paths from the module's folder), all or just one.
 */

/** The module's MCP servers, as written (undefined when it declares none). */
export function declaredMcpServers(exports: Record<string, unknown>): unknown {
  const config = (exports['default'] ?? exports['config']) as { mcpServers?: unknown } | undefined;
  if (typeof config === 'object' && config !== null && config.mcpServers !== undefined) return config.mcpServers;
  return exports['mcpServers'];
}

/** Starts the module's MCP servers (or only `server`); errors name the file, the server and what is wrong. */
export async function openDeclaredMcpServers(
  exports: Record<string, unknown>,
  file: string,
  server?: string,
): Promise<McpServers> {
  const declared = declaredMcpServers(exports);
  if (declared === undefined) {
    if (server !== undefined)
      throw new UserCodeError(
        `${file}: declares no MCP servers (no mcpServers in its config), so there is no server "${server}"`,
      );
    return McpServers.none();
  }
  const parsed = McpServersConfig.safeParse(declared);
  if (!parsed.success) throw new UserCodeError(`${file}: mcpServers: ${describeIssues(parsed.error.issues)}`);
  let servers = parsed.data;
  if (server !== undefined) {
    if (!(server in servers))
      throw new UserCodeError(
        `${file}: declares no MCP server "${server}" (its servers: ${Object.keys(servers).join(', ') || 'none'})`,
      );
    servers = { [server]: servers[server] };
  }
  return McpServers.open(servers, { baseDir: path.dirname(path.resolve(file)) });
}
