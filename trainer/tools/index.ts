/**
 * The tool API: the `Tool` base class users extend, the runner that executes calls with
 * timeouts, concurrency limits and batching, the loader for user TypeScript, and built-in tools.
 */
export type { CallView, RewardContext, ToolCallOutcome, ToolContext, ToolLogger, TrajectoryView } from './context';
export { ToolDefinitionError, UserCodeError } from './errors';
export { normalizeToolOutput, observationText, textResult, type TextContent, type ToolContent, type ToolOutput, type ToolResult } from './result';
export { isZodObjectSchema, parametersJsonSchema, type JsonSchema, type ParametersSchema } from './schema';
export { Tool, defineTool, type ToolDefinition, type ToolInvocation } from './tool';
export { ToolSet } from './toolSet';
export { ToolRunner, describeThrown, type ToolCallError, type ToolCallRequest, type ToolLogLine, type ToolRunOutcome, type ToolRunnerOptions } from './runner';
export { ToolTimeoutError } from './deadline';
export { compileUserModule, loadTools, loadUserModule, rolloutStudioExternal, PACKAGE_NAME } from './loader';
