/**
 * The trainer as a library: `import { … } from 'rollout-studio'`. User code (tools, rewards,
 * configs, dataset generators) imports from here; when the trainer loads a user file, this very
 * module instance answers that import (see usercode/loadUserModule.ts), so `instanceof Tool` holds.
 */
export * from './shared/protocol';
export { collectEnvironmentReport, formatEnvironmentReport } from './environment/report';

/** zod, the instance the trainer validates with: tools' `parameters` and dataset `fields` are zod schemas. */
export { z } from 'zod';
/** The trainer's seeded random generator, for reproducible dataset generators. */
export { Random, type RandomState } from './util/random';

export * from './tools';
export { CalculatorTool, type CalculatorOptions } from './tools/builtin/calculator';
export { ArithmeticError, evaluateArithmetic, formatNumber } from './tools/builtin/arithmetic';
export { SearchTool, type SearchData, type SearchDocument, type SearchHit, type SearchToolOptions } from './tools/builtin/search';
export { JavaScriptTool, SandboxError, runJavaScript, type JavaScriptRun, type JavaScriptToolOptions } from './tools/builtin/javascript';
export * from './rollout';
export * from './rewards';
export { toRlSample } from './rl/rewardPlacement';
export * from './data';
export { defineConfig, type TrainingConfig, type TrainingConfigInput } from './training/trainingConfig';
/** Hugging Face Hub checkpoints: `pullModel('Qwen/Qwen3-0.6B')` into the Hugging Face cache; `resolveModelPath` for a folder or a repo id. */
export { HubError, hubSettings, pullModel, resolveModelPath, type PullProgress, type PullResult } from './models/hub';
export { McpServerError, McpTool, McpToolError, type McpServerConfigInput } from './mcp';
