/**
 * The agent loop and everything it produces: token-exact multi-turn trajectories, tool-call
 * formats, the length budget, and the conversion to run-store records.
 */
export type {
  GeneratedTurn,
  Policy,
  PolicySession,
  SamplingOptions,
  TurnOptions,
  TurnRequest,
} from '../../foundations/models/generation/policy';
export { AgentLoop, PolicyContractError, type AgentLoopOptions, type RunOptions } from './agentLoop';
export { BudgetError, LengthBudget, checkBudget } from './budget';
export { defaultErrorObservation, type ErrorObservation, type ObservedError } from './errorObservation';
export {
  DemonstrationError,
  tokenizeDemonstration,
  type DemonstrationOptions,
  type DemonstrationTokens,
} from './tokenizeDemonstration';
export {
  demonstrate,
  DemonstrationScriptError,
  type DemonstrateOptions,
  type DemonstratedCall,
  type DemonstrationRow,
  type DemonstrationScript,
  type ScriptedCall,
  type ScriptedSolver,
} from './demonstrate';
export { renderObservation } from './observation';
export { contentStart, type ParsedToolCall, type StopConditions, type ToolCallFormat } from './formats/toolCallFormat';
export { HermesFormat, type HermesFormatOptions } from './formats/hermes';
export { CodeBlockFormat, type CodeBlockFormatOptions } from './formats/codeBlock';
export type { PendingCall, RolloutObserver } from './observer';
export { renderPrompt, taskText, type PromptOptions, type RenderedPrompt } from './prompt';
export { TextOffsets } from './textOffsets';
export {
  finalContent,
  lastPolicyToken,
  type Episode,
  type FinishReason,
  type HistoryRewriteNote,
  type ToolCallResult,
  type Trajectory,
  type TrajectoryTurn,
  type TurnFinish,
} from './trajectory';
export { checkTrajectory, TrajectoryInvariantError } from './validate';
export { defaultTruncationMarker, truncateToTokens, type TruncatedText, type TruncationMarker } from './truncate';
