/** MCP tools in: tools of MCP servers (stdio or Streamable HTTP) as Tools of a run. */
export {
  McpServerConfig,
  McpServersConfig,
  HttpServerConfig,
  StdioServerConfig,
  describeServer,
  recordableServers,
  type McpServerConfigInput,
} from './mcpConfig';
export { McpConnection, McpServerError, type McpConnectionOptions } from './connection';
export { McpTool, McpToolError } from './mcpTool';
export { McpServers } from './servers';
export { argumentsFromJsonSchema } from './argumentSchema';
export { toToolResult, imageBlocks, type McpContentBlock, type McpImage } from './content';
