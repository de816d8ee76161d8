/**
 * The tool API: the `Tool` base class users extend, the runner that executes calls with
 * timeouts, concurrency limits and batching, and built-in tools. (Loading the user's TypeScript
 * is trainer/bridges/usercode's job.)
 */
export type { CallView, RewardContext, ToolCallOutcome, ToolContext, ToolLogger, TrajectoryView } from './context';
export { ToolDefinitionError, UserCodeError } from './toolErrors';
export {
  imageResult,
  normalizeToolOutput,
  observationImages,
  observationText,
  textResult,
  type ImageContent,
  type TextContent,
  type ToolContent,
  type ToolOutput,
  type ToolResult,
} from './result';
export { isZodObjectSchema, parametersJsonSchema, type JsonSchema, type ParametersSchema } from './schema';
export { Tool, defineTool, type ToolDefinition, type ToolInvocation } from './tool';
export { ToolSet } from './toolSet';
export {
  ToolRunner,
  describeThrown,
  type ToolCallError,
  type ToolCallRequest,
  type ToolLogLine,
  type ToolRunOutcome,
  type ToolRunnerOptions,
  type ToolCallInterceptor,
  type InterceptedOutcome,
  type InterceptedCall,
} from './runner';
export { ToolTimeoutError } from './deadline';
