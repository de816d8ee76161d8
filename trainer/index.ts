/**
 * The trainer as a library: `import { … } from 'rollout-studio'`. User code (tools, rewards,
 * configs, dataset generators) imports from here; when the trainer loads a user file, this very
 * module instance answers that import (see usercode/loadUserModule.ts), so `instanceof Tool` holds.
 */
export * from './contract/protocol';
export { collectEnvironmentReport, formatEnvironmentReport } from './bridges/environment/report';

/** zod, the instance the trainer validates with: tools' `parameters` and dataset `fields` are zod schemas. */
export { z } from 'zod';
/** The trainer's seeded random generator, for reproducible dataset generators. */
export { Random, type RandomState } from './foundations/models/random';

export * from './foundations/tools';
export { CalculatorTool, type CalculatorOptions } from './foundations/tools/builtin/calculator';
export { ArithmeticError, evaluateArithmetic, formatNumber } from './foundations/tools/builtin/arithmetic';
export {
  SearchTool,
  type SearchData,
  type SearchDocument,
  type SearchHit,
  type SearchToolOptions,
} from './foundations/tools/builtin/search';
export {
  JavaScriptTool,
  SandboxError,
  runJavaScript,
  type JavaScriptRun,
  type JavaScriptToolOptions,
} from './foundations/tools/builtin/javascript';
export * from './pipeline/rollout';
export { toTrajectoryRecord, type RecordOptions, type RecordRewards } from './pipeline/training/step/trajectoryRecord';
export * from './pipeline/rewards';
export { toRlSample } from './pipeline/rl/rewardPlacement';
export * from './foundations/data';
export { defineConfig, type TrainingConfig, type TrainingConfigInput } from './pipeline/training/config/trainingConfig';
/** Hugging Face Hub checkpoints: `pullModel('Qwen/Qwen3-0.6B')` into the Hugging Face cache; `resolveModelPath` for a folder or a repo id. */
export {
  HubError,
  hubSettings,
  pullModel,
  resolveModelPath,
  type PullProgress,
  type PullResult,
} from './foundations/models/hub';
export { McpServerError, McpTool, McpToolError, type McpServerConfigInput } from './foundations/mcp';
