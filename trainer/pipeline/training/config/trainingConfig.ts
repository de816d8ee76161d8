import { z } from 'zod';
import { checkBuiltinModelName } from '../../../foundations/models/builtinModels';
import { LORA_TARGETS } from '../../../foundations/models/lora';
import { QuantizeSetting } from '../../../foundations/models/quantized/blockQuantize';
import { Algorithm } from '../../../contract/protocol/runStore';
import { describeIssues } from '../../../contract/protocol/parse';
import { checkRewardConfig, type RewardConfig } from '../../rewards/score';
import { LengthBudget } from '../../rollout/budget';
import type { ToolCallFormat } from '../../rollout/formats/toolCallFormat';
import type { AgentFunction, AgentRunner } from '../../rollout/gateway/agentRunner';
import { Tool } from '../../../foundations/tools/tool';
import { ToolSet } from '../../../foundations/tools/toolSet';
import { McpServersConfig, recordableServers } from '../../../foundations/mcp/mcpConfig';
import {
  ALGORITHM_DEFAULTS,
  CRITIC_DEFAULTS,
  DYNAMIC_SAMPLING_MAX_ROUNDS,
  GROUP_BASELINE_ALGORITHMS,
  SHARED_VALUE_COEF,
} from './algorithmDefaults';
import { HealthSettings, OnCollapse } from '../health/healthSettings';

/**
 * The training config: a TypeScript file whose default export is `defineConfig({...})`. Every
 * default lives here, in this one schema; every error names the field and what was expected.
 * Paths are relative to the config file's folder.
 */

const positiveInt = z.number().int().positive();
const fraction = z.number().min(0).max(1);

const LoraSection = z.union([
  z.literal(false),
  z.strictObject({
    rank: positiveInt.default(16),
    alpha: z.number().positive().default(32),
    dropout: z.literal(0).default(0),
    targets: z.array(z.enum(LORA_TARGETS)).min(1).default(['q_proj', 'k_proj', 'v_proj', 'o_proj']),
    /** Rank-stabilised LoRA: scale the adapters by alpha/√rank instead of alpha/rank (PEFT's use_rslora). */
    rslora: z.boolean().optional(),
  }),
]);

export const ModelSection = z.strictObject({
  /**
   * A Hugging Face model folder (config.json, *.safetensors, tokenizer.json, tokenizer_config.json),
   * relative to the config's folder; `rollout-studio:base`, the small pretrained base that ships
   * with the package; or, when no such folder exists, a Hub repo id such as `Qwen/Qwen3-0.6B`,
   * downloaded into the Hugging Face cache on first use (models/hub).
   */
  path: z.string().min(1),
  /** A Hub repo's branch, tag or commit hash (default `main`); only with a repo id. */
  revision: z.string().min(1).optional(),
  /**
   * LoRA adapters (default), or `false` to train every weight (small models).
   */
  lora: LoraSection.default({ rank: 16, alpha: 32, dropout: 0, targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] }),
  /** Vision-language models: train the vision tower too (frozen by default; LoRA adapts the language model only). */
  trainVision: z.boolean().default(false),
  /**
   * QLoRA: keep the frozen base block-quantized — `'int4'` or `'int8'`, or `{ type, blockSize }`
   * (default blocks of 32, llama.cpp's). The same quantized base samples, scores and trains, so a
   * 1.5B–3B model fits a laptop's memory; the adapters and the optimizer stay float32. LoRA only.
   */
  quantize: QuantizeSetting.optional(),
});

/**
 * The RL algorithm. Fields left out take the algorithm's own defaults (algorithmDefaults.ts, cited
 * in trainer/pipeline/rl/ADVANTAGES.md), so `{ name: 'reinforce++' }` runs REINFORCE++ with its KL in the
 * reward and `{ name: 'dr-grpo' }` runs Dr. GRPO with its constant normaliser.
 */
const AlgorithmFields = z.strictObject({
  name: Algorithm.exclude(['sft']),
  /** Samples per prompt (GRPO and RLOO compare within a group; others use it too, for the baseline). */
  groupSize: z.number().int().min(1).default(8),
  /** GRPO: divide the outcome side of the advantage by the group's standard deviation (Dr. GRPO never does). */
  scaleByStd: z.boolean().optional(),
  /** Discount for REINFORCE++ and GAE. */
  gamma: fraction.optional(),
  /** GAE's λ (PPO). */
  lambda: fraction.optional(),
  clipLow: z.number().positive().optional(),
  clipHigh: z.number().positive().optional(),
  /** Dual-clip PPO's bound c for negative advantages; omit for none. */
  dualClip: z.number().gt(1).optional(),
  /** KL to the reference policy — the policy as RL starts (the warm start, when there is one). */
  kl: z
    .strictObject({
      coef: z.number().min(0).optional(),
      estimator: z.enum(['k1', 'k2', 'k3']).optional(),
      /** KL as a loss term, or −β·KL in the per-token rewards. */
      mode: z.enum(['loss', 'reward']).optional(),
    })
    .optional(),
  entropyCoef: z.number().min(0).default(0),
  aggregation: z.enum(['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm']).optional(),
  /** `seq-mean-token-sum-norm`'s constant C (default: the most tokens a trajectory can generate, maxTurns × maxNewTokensPerTurn, at most maxTotalTokens). */
  lossScaleFactor: z.number().positive().optional(),
  /**
   * RFT (`name: 'rft'`) only: a trajectory is trained on when its outcome reward is at least this
   * (default 1: a correct answer under exact match); the outcome alone, not the process rewards.
   */
  rftThreshold: z.number().finite().optional(),
  /**
   * Which tokens the policy loss trains on: `generated` (the default, and the right choice) only
   * the tokens the policy sampled; `response` everything after the prompt — tool results and
   * template text too — which is Agent-R1's "loss mask off" ablation, for comparison only.
   */
  lossMask: z.enum(['generated', 'response']).default('generated'),
  /** Passes over each rollout batch, and optimizer steps per pass. */
  epochs: positiveInt.default(1),
  miniBatches: positiveInt.default(1),
  /**
   * Dynamic sampling (DAPO, Yu et al. 2025, §3.2), for the group-baseline estimators (GRPO,
   * Dr. GRPO, RLOO, REINFORCE++-baseline): a group whose rewards are all equal has zero advantage,
   * so it is dropped before the update and fresh prompts are rolled out in extra rounds — at most
   * `maxRounds` rounds in all, the first included — until the step has `rollout.promptsPerStep`
   * groups with signal. Default: the algorithm's (algorithmDefaults.ts); see trainer/pipeline/rl/ADVANTAGES.md.
   */
  dynamicSampling: z
    .strictObject({
      enabled: z.boolean().optional(),
      maxRounds: positiveInt.optional(),
    })
    .optional(),
});

/** The algorithm section with every unset field taken from the algorithm's defaults. */
function withAlgorithmDefaults(a: z.output<typeof AlgorithmFields>) {
  const d = ALGORITHM_DEFAULTS[a.name];
  return {
    ...a,
    scaleByStd: a.scaleByStd ?? d.scaleByStd,
    gamma: a.gamma ?? d.gamma,
    lambda: a.lambda ?? d.lambda,
    clipLow: a.clipLow ?? d.clipLow,
    clipHigh: a.clipHigh ?? d.clipHigh,
    kl: { coef: a.kl?.coef ?? d.kl.coef, estimator: a.kl?.estimator ?? d.kl.estimator, mode: a.kl?.mode ?? d.kl.mode },
    aggregation: a.aggregation ?? d.aggregation,
    // Only RFT's section has it, so every other config hashes (and resumes) as before RFT existed.
    ...(a.name === 'rft' ? { rftThreshold: a.rftThreshold ?? d.rftThreshold } : {}),
    dynamicSampling: {
      enabled: a.dynamicSampling?.enabled ?? d.dynamicSampling,
      maxRounds: a.dynamicSampling?.maxRounds ?? DYNAMIC_SAMPLING_MAX_ROUNDS,
    },
  };
}

export const AlgorithmSection = AlgorithmFields.superRefine((a, ctx) => {
  // Set for another algorithm it would be silently ignored.
  if (a.rftThreshold !== undefined && a.name !== 'rft')
    ctx.addIssue({
      code: 'custom',
      path: ['rftThreshold'],
      message: `only RFT (name: 'rft') filters by a threshold, and name is '${a.name}'`,
    });
}).transform(withAlgorithmDefaults);

/**
 * PPO's critic. `separate` (the default, as verl and Agent-R1 run it): a network of its own,
 * initialised from the policy as RL starts (or from `model`), with its own optimizer, learning
 * rate, gradient clipping and LoRA choice; the policy's weights never see the value loss.
 * `shared`: a value head on the policy's own network, trained with the policy loss by the
 * policy's optimizer (cheaper; the value loss moves the policy's weights, so no warm-up).
 * Defaults from verl's critic config (algorithmDefaults.ts, CRITIC_DEFAULTS).
 */
export const CriticSection = z.strictObject({
  network: z.enum(['separate', 'shared']).default('separate'),
  /** A model folder or Hub repo id (same tokenizer) to start the critic from; default: the policy as RL starts. */
  model: z.string().min(1).optional(),
  /** LoRA adapters for the critic, or `false` for every weight; default: as the policy (`model.lora`). */
  lora: LoraSection.optional(),
  lr: z.number().positive().default(CRITIC_DEFAULTS.lr),
  weightDecay: z.number().min(0).default(CRITIC_DEFAULTS.weightDecay),
  maxGradNorm: z.number().min(0).default(CRITIC_DEFAULTS.maxGradNorm),
  /** Clip the new value to within this of the value at rollout time. */
  valueClip: z.number().positive().default(CRITIC_DEFAULTS.valueClip),
  /** RL steps that train only the critic first (the policy is not updated at all). */
  warmupSteps: z.number().int().min(0).default(CRITIC_DEFAULTS.warmupSteps),
  /** `shared` only: the value loss's weight in the policy's loss. */
  valueCoef: z.number().min(0).default(SHARED_VALUE_COEF),
});

export const RolloutSection = z.strictObject({
  /** Dataset rows per step; each is sampled `algorithm.groupSize` times. */
  promptsPerStep: positiveInt.default(8),
  budget: LengthBudget.default({
    maxTurns: 4,
    maxNewTokensPerTurn: 256,
    maxTotalTokens: 2048,
    maxToolResultTokens: 256,
  }),
  temperature: z.number().positive().default(1),
  topP: z.number().gt(0).max(1).default(1),
  topK: z.number().int().min(0).default(0),
  /** For rows without a system message. */
  systemPrompt: z.string().optional(),
  /** Extra chat-template variables, e.g. `{ enable_thinking: false }`. */
  templateKwargs: z.record(z.string(), z.unknown()).optional(),
  /** How the policy writes calls (default: Hermes/Qwen `<tool_call>` JSON). */
  format: z
    .custom<ToolCallFormat>(
      (v) => typeof v === 'object' && v !== null && 'parse' in (v as object),
      'expected a tool-call format (HermesFormat, CodeBlockFormat, …)',
    )
    .optional(),
  /**
   * Schema-constrained tool calls: while the policy writes a call it samples only tokens that keep
   * it a valid call of a known tool with arguments of the tool's schema; the update scores the
   * same distribution. `false` samples calls freely (malformed ones become error observations).
   */
  constrainToolCalls: z.boolean().default(true),
  /**
   * Strings that end an assistant turn as soon as the policy has written one, kept in the text
   * (vLLM's `stop` with `include_stop_str_in_output`), e.g. `['</answer>']`: an answer ends the
   * episode there, instead of whatever a small policy writes after it until the token limit. The
   * loop closes the turn with the template's end-of-turn token, which the policy is not trained on.
   */
  stop: z.array(z.string().min(1, 'a stop string may not be empty')).default([]),
});

const agentTimeout = z.number().positive().optional();

/**
 * An agent we did not write, trained as it is (pipeline/rollout/gateway): each rollout is one
 * session of it, its model calls answered by the policy under training through an OpenAI-compatible
 * endpoint of the session's own. A module (a path, or `{ module, export }`) exporting
 * `async (row, { baseURL, apiKey, model, signal }) => …`; a command (`{ command: ['python3',
 * 'agent.py'] }`: the row as JSON on stdin, `OPENAI_BASE_URL` and `OPENAI_API_KEY` set); or a
 * function in the config itself (or `{ function }`). `timeoutSeconds` bounds a session (default 600).
 */
export const AgentSection = z.union([
  z.string().min(1),
  z.strictObject({ module: z.string().min(1), export: z.string().min(1).optional(), timeoutSeconds: agentTimeout }),
  z.strictObject({
    command: z.array(z.string().min(1)).min(1),
    /** The folder it runs in, relative to the config's (default: the config's folder). */
    cwd: z.string().optional(),
    env: z.record(z.string(), z.string()).optional(),
    timeoutSeconds: agentTimeout,
  }),
  z.strictObject({
    function: z.custom<AgentFunction>((v) => typeof v === 'function', 'expected a function'),
    timeoutSeconds: agentTimeout,
  }),
  z.custom<AgentFunction>(
    (v) => typeof v === 'function',
    'expected an agent: a module path, { module }, { command: [...] }, a function or { function }',
  ),
]);
export type AgentSection = z.infer<typeof AgentSection>;

/** The agents a loader places (a function runs where the config was loaded). */
export type ModuleOrCommandAgent = Exclude<AgentSection, AgentFunction | { function: AgentFunction }>;

/** The config's agent function, when it is one. */
export function agentFunction(agent: AgentSection): AgentFunction | undefined {
  if (typeof agent === 'function') return agent;
  return typeof agent === 'object' && 'function' in agent ? (agent as { function: AgentFunction }).function : undefined;
}

/** A session's time limit, in milliseconds. */
export function agentTimeoutMs(agent: AgentSection): number {
  return typeof agent === 'object' && agent.timeoutSeconds !== undefined ? agent.timeoutSeconds * 1000 : 600_000;
}

export const OptimizationSection = z.strictObject({
  lr: z.number().positive().default(1e-5),
  warmupSteps: z.number().int().min(0).default(0),
  schedule: z.enum(['constant', 'linear', 'cosine']).default('constant'),
  /** Learning rate at the end of a linear or cosine schedule, as a fraction of `lr`. */
  minLrRatio: fraction.default(0),
  weightDecay: z.number().min(0).default(0),
  maxGradNorm: z.number().min(0).default(1),
  beta1: fraction.default(0.9),
  beta2: fraction.default(0.999),
  eps: z.number().positive().default(1e-8),
  /** Sequences per forward/backward pass (memory); larger batches accumulate gradients. */
  microBatchSize: positiveInt.default(8),
  /**
   * Recompute each decoder layer's activations in the backward pass instead of keeping them
   * (Hugging Face's `gradient_checkpointing`): an update holds one layer's activations rather
   * than every layer's, for about a third more update time. Unset: on for a base of more than 1B
   * parameters (ModelRuntime.checkpointsLayers).
   */
  gradientCheckpointing: z.boolean().optional(),
});

export const SftSection = z.strictObject({
  /**
   * JSONL of demonstrations: rows with `messages` (calls as assistant `tool_calls`, results as
   * `tool` messages). A list of files is a curriculum: trained in order, each for `epochs`
   * passes (shuffled within itself) before the next — e.g. a skill such as reading a name back,
   * then the task.
   */
  data: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  epochs: positiveInt.default(1),
  lr: z.number().positive().default(1e-4),
  batchSize: positiveInt.default(16),
  warmupSteps: z.number().int().min(0).default(0),
  /**
   * After each epoch, check up to this many demonstrations of the file in training (evenly
   * spaced): the share of their tool-call turns and other turns the model writes token for token
   * when it decodes greedily from the demonstration's own prefix (demonstrationCheck.ts). A warm
   * start that has not learned its calls says so before RL starts. 0: no check.
   */
  check: z.number().int().min(0).default(32),
  /**
   * Keep the checked demonstrations out of training: a held-out check (a validation split), which
   * also sees memorising. Default: they are trained on too, which costs no data and shows a warm
   * start that is still short of its demonstrations.
   */
  holdOut: z.boolean().default(false),
});

export const EvaluationSection = z.strictObject({
  /** Held-out rows (default: data.eval). */
  data: z.string().optional(),
  /**
   * Evaluate every N RL steps, besides before and after training (0: only those two). Default: a
   * fifth of the steps, rounded up — five or six evaluations a run (evaluationSchedule.ts); each
   * one that beats the best so far is kept as checkpoints/best.
   */
  every: z.number().int().min(0).optional(),
  /** Rows evaluated during training: the first N, the same every time (default: the first 100). */
  samples: positiveInt.optional(),
  /** 0 is greedy decoding. */
  temperature: z.number().min(0).default(0),
});

export const TrainingConfigSchema = z.strictObject({
  name: z.string().optional(),
  model: ModelSection,
  data: z.strictObject({
    /** JSONL dataset rows (see trainer/foundations/data). */
    train: z.string().min(1),
    eval: z.string().optional(),
    /** zod schema of the rows' own fields (answer, …); checked on load, naming file and line. */
    fields: z.custom<z.ZodObject>((v) => v instanceof z.ZodObject, 'expected a zod object schema').optional(),
  }),
  tools: z
    .array(z.custom<Tool>((v) => v instanceof Tool, 'expected an instance of a Tool subclass (new MyTool(…))'))
    .default([]),
  /** An existing agent to train as it is (see AgentSection); its tools are its own (`tools` then only give the warm start's demonstrations their schemas and per-call reward hooks). */
  agent: AgentSection.optional(),
  /** MCP servers whose tools join `tools` for the run (started with it, stopped after it); see trainer/foundations/mcp/mcpConfig.ts. */
  mcpServers: McpServersConfig.default({}),
  rewards: z.custom<RewardConfig>(
    (v) => typeof v === 'object' && v !== null && Array.isArray((v as RewardConfig).outcome),
    'expected { outcome: [...], process?, combine?, … }',
  ),
  /**
   * The task metric, by the name of an outcome reward (default: the first one): its mean is
   * recorded as `score/<name>` and reported by `train`, `eval`, the status bar and the panels.
   */
  metric: z.string().min(1).optional(),
  algorithm: AlgorithmSection,
  /** PPO's critic (see CriticSection); PPO without one gets the defaults. */
  critic: CriticSection.optional(),
  rollout: RolloutSection.default(RolloutSection.parse({})),
  optimization: OptimizationSection.default(OptimizationSection.parse({})),
  sft: SftSection.optional(),
  steps: positiveInt,
  device: z.enum(['cpu', 'webgpu', 'cuda', 'auto']).default('cpu'),
  seed: z.number().int().min(0).default(0),
  evaluation: EvaluationSection.default(EvaluationSection.parse({})),
  output: z
    .strictObject({
      /** Where runs go, relative to the config's folder unless absolute. */
      runsDir: z.string().default('.rollout/runs'),
      checkpointEvery: z.number().int().min(0).default(10),
      keepCheckpoints: positiveInt.default(2),
    })
    .default({ runsDir: '.rollout/runs', checkpointEvery: 10, keepCheckpoints: 2 }),
  /** A collapse (health.ts: a training-side collapse, or a held-out score far below the best): warn, roll back to checkpoints/best at half the learning rate, or stop. */
  onCollapse: OnCollapse.default('warn'),
  /** The health checks' thresholds (healthSettings.ts). */
  health: HealthSettings.default(HealthSettings.parse({})),
  /**
   * Recorded tool results (tools/cassette.ts): `record` writes every tool call's arguments and
   * result to the run's `cassette.jsonl`; `replay` (a run directory or a cassette file, relative to
   * the config's folder unless absolute) answers calls from a recording instead of the tools, and
   * a call it has no recording of is an `unrecorded` error observation (`onMiss: 'error'`) or a
   * live call (`'live'`).
   */
  toolCassette: z
    .strictObject({
      record: z.boolean().default(false),
      replay: z.string().min(1).optional(),
      onMiss: z.enum(['error', 'live']).default('error'),
    })
    .optional(),
  /** Non-finite loss or gradient: the update is skipped; this many in a row stops the run. */
  nonFinite: z.strictObject({ maxConsecutive: positiveInt.default(3) }).default({ maxConsecutive: 3 }),
});

export type TrainingConfigInput = z.input<typeof TrainingConfigSchema>;
export type TrainingConfig = z.output<typeof TrainingConfigSchema>;

/** The config file's default export: the config as written (types checked by the editor; values by the trainer). */
/** What marks a config as made by `defineConfig` (Symbol.for: the same mark from any copy of the library). */
const DEFINED_CONFIG = Symbol.for('rollout-studio.defineConfig');

/**
 * A training config: what a config file's default export must be. It types the object as you
 * write it (every field and default is documented on TrainingConfigInput) and marks it, so that a
 * file whose default export merely looks like a config — an object without the types checked,
 * a config of another tool — is refused with a message instead of being trained.
 */
export function defineConfig(config: TrainingConfigInput): TrainingConfigInput {
  return Object.defineProperty({ ...config }, DEFINED_CONFIG, { value: true, enumerable: false });
}

/** Was this value made by defineConfig? */
export function isDefinedConfig(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[DEFINED_CONFIG] === true;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface LoadedConfig {
  config: TrainingConfig;
  /** The config file, absolute. */
  file: string;
  /** Resolve a path from the config relative to its folder. */
  resolve(p: string): string;
  /** A stable hash of the values that decide the run (resume refuses another). */
  hash: string;
  /**
   * Places the config's tools where a deadline can stop them — a worker thread that evaluates the
   * same module (usercode/toolHost.ts); given by the loader of a config file. Without it (a config
   * made in code) the tools run on the trainer's thread.
   */
  placeTools?: (tools: readonly Tool[]) => Promise<PlacedTools>;
  /**
   * Places the config's rewards where a deadline can stop them — a worker thread that evaluates
   * the same module (usercode/rewardHost.ts); given by the loader of a config file. Without it (a
   * config made in code) the rewards run on the trainer's thread.
   */
  placeRewards?: (rewards: RewardConfig) => Promise<PlacedRewards>;
  /**
   * Runs the config's `agent` (a module in a host process, a command per session); given by the
   * loader of a config file. Without it only a function agent can run (on the trainer's thread).
   */
  placeAgent?: (agent: ModuleOrCommandAgent, log: (line: string) => void) => AgentRunner;
}

/** A run's tools as placed (see LoadedConfig.placeTools); `close` ends what placing them started. */
export interface PlacedTools {
  tools: Tool[];
  close(): Promise<void>;
}

/** A run's rewards as placed (see LoadedConfig.placeRewards); `close` ends what placing them started. */
export interface PlacedRewards {
  rewards: RewardConfig;
  close(): Promise<void>;
}

/** The config's rewards, placed where the loader wants them. */
export async function placeConfigRewards(loaded: LoadedConfig): Promise<PlacedRewards> {
  return loaded.placeRewards
    ? loaded.placeRewards(loaded.config.rewards)
    : { rewards: loaded.config.rewards, close: async () => undefined };
}

/** The config's tools, placed where the loader wants them. */
export async function placeConfigTools(loaded: LoadedConfig): Promise<PlacedTools> {
  return loaded.placeTools
    ? loaded.placeTools(loaded.config.tools)
    : { tools: [...loaded.config.tools], close: async () => undefined };
}

/** Validate a config value; errors are "config.ts: algorithm.groupSize: …", one per issue. */
export function parseConfig(value: unknown, file: string): TrainingConfig {
  refuseMovedFields(value, file);
  const result = TrainingConfigSchema.safeParse(value);
  if (!result.success)
    throw new ConfigError(`${file}: ${describeIssues(result.error.issues).split('; ').join(`\n${file}: `)}`);
  const config = result.data;
  try {
    new ToolSet(config.tools);
    checkRewardConfig(config.rewards);
  } catch (error) {
    throw new ConfigError(`${file}: ${(error as Error).message}`);
  }
  try {
    // A misspelt built-in name fails here, before anything runs; a missing base only when used.
    checkBuiltinModelName(config.model.path);
  } catch (error) {
    throw new ConfigError(`${file}: model.path: ${(error as Error).message}`);
  }
  if (config.metric !== undefined && !config.rewards.outcome.some((r) => r.name === config.metric)) {
    const names = config.rewards.outcome.map((r) => `"${r.name}"`).join(', ');
    throw new ConfigError(
      `${file}: metric: "${config.metric}" is not the name of an outcome reward; expected one of ${names || '(none: rewards.outcome is empty)'}`,
    );
  }
  checkAlgorithm(config, file);
  checkQuantize(config, file);
  if (config.optimization.microBatchSize > config.rollout.promptsPerStep * config.algorithm.groupSize) {
    config.optimization.microBatchSize = config.rollout.promptsPerStep * config.algorithm.groupSize;
  }
  return config;
}

/** The reward config's numbers that decide the run, where set (unset ones leave the hash as it was before they existed). */
function rewardSettings(r: RewardConfig): Record<string, unknown> {
  const picked = {
    toolRewards: r.toolRewards,
    errorPenalty: r.errorPenalty,
    processWeight: r.processWeight,
    processNormMomentum: r.processNormMomentum,
  };
  return Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined));
}

/** The critic's settings lived in `algorithm` before the critic became a network of its own. */
function refuseMovedFields(value: unknown, file: string): void {
  const algorithm = (value as { algorithm?: Record<string, unknown> } | undefined)?.algorithm;
  const moved = {
    criticWarmupSteps: 'critic.warmupSteps',
    valueClip: 'critic.valueClip',
    valueCoef: 'critic.valueCoef (with critic.network: "shared")',
  };
  for (const [old, now] of Object.entries(moved)) {
    if (algorithm && typeof algorithm === 'object' && old in algorithm)
      throw new ConfigError(`${file}: algorithm.${old} has moved to ${now}`);
  }
}

/** What the schema cannot say alone: group sizes, Dr. GRPO's std, and the critic's combinations. */
function checkAlgorithm(config: TrainingConfig, file: string): void {
  const a = config.algorithm;
  const groupBaseline = (GROUP_BASELINE_ALGORITHMS as readonly string[]).includes(a.name);
  if (groupBaseline && a.groupSize < 2) {
    throw new ConfigError(
      `${file}: algorithm.groupSize: ${a.name} compares samples within a group; expected at least 2, got ${a.groupSize}`,
    );
  }
  checkRft(config, file);
  if (a.dynamicSampling.enabled && !groupBaseline) {
    throw new ConfigError(
      `${file}: algorithm.dynamicSampling: ${a.name} learns from groups whose rewards are all equal (${a.name === 'ppo' ? 'its critic is the baseline' : 'its advantages are whitened over the whole batch'}), so dropping them would only waste rollouts; dynamic sampling is for ${GROUP_BASELINE_ALGORITHMS.join(', ')}`,
    );
  }
  if (a.name === 'dr-grpo' && a.scaleByStd)
    throw new ConfigError(
      `${file}: algorithm.scaleByStd: Dr. GRPO does not divide by the group's standard deviation; use name: 'grpo' for that`,
    );
  if (config.critic && a.name !== 'ppo')
    throw new ConfigError(`${file}: critic: only PPO trains a critic (algorithm.name is ${a.name})`);
  if (a.name !== 'ppo') return;
  const critic = (config.critic ??= CriticSection.parse({}));
  if (critic.network === 'shared') {
    if (critic.warmupSteps > 0)
      throw new ConfigError(
        `${file}: critic.warmupSteps: a shared-trunk critic's warm-up would move the policy's weights; use network: 'separate' for a warm-up`,
      );
    if (critic.model !== undefined || critic.lora !== undefined)
      throw new ConfigError(
        `${file}: critic.${critic.model !== undefined ? 'model' : 'lora'}: a shared-trunk critic is the policy's network; only a separate critic has its own`,
      );
    return;
  }
  const policyLora = config.model.lora;
  const criticLora = critic.lora ?? policyLora;
  if (critic.model === undefined && criticLora !== false) {
    if (policyLora === false)
      throw new ConfigError(
        `${file}: critic.lora: adapters on a critic that starts from a fully fine-tuned policy would need a second frozen copy of the policy; use critic.lora: false, or critic.model`,
      );
    if (JSON.stringify(criticLora) !== JSON.stringify(policyLora))
      throw new ConfigError(
        `${file}: critic.lora: to start from the policy, the critic's adapters take over the policy's, so they need its rank, alpha and targets (${JSON.stringify(policyLora)}); or use critic.lora: false, or critic.model`,
      );
  }
}

/** A quantized base is frozen: only adapters can train over it. */
function checkQuantize(config: TrainingConfig, file: string): void {
  if (config.model.quantize === undefined) return;
  if (config.model.lora === false)
    throw new ConfigError(
      `${file}: model.quantize: a quantized base cannot be trained, and model.lora is false (every weight trains); keep LoRA adapters (the default model.lora) or remove model.quantize`,
    );
  const critic = config.critic;
  if (critic?.network === 'separate' && critic.model === undefined && critic.lora === false)
    throw new ConfigError(
      `${file}: critic.lora: false trains a full copy of the policy's weights, which a quantized base (model.quantize) does not keep; give the critic adapters (the default) or a model of its own (critic.model)`,
    );
}

/** RFT filters on the outcome, so a KL in the reward would do nothing. */
function checkRft(config: TrainingConfig, file: string): void {
  const a = config.algorithm;
  if (a.name !== 'rft') return;
  if (a.kl.coef > 0 && a.kl.mode === 'reward')
    throw new ConfigError(
      `${file}: algorithm.kl.mode: RFT keeps trajectories by their outcome reward alone, so a KL in the reward would have no effect; use mode: 'loss' (or coef: 0)`,
    );
}

/**
 * The warm start's settings that change what it trains. Its check only reads the model (and
 * draws no random numbers), so it is left out — the hash of a config is what it was before the
 * check existed — unless the checked demonstrations are held out of training.
 */
function trainedSft(sft: NonNullable<TrainingConfig['sft']>): Record<string, unknown> {
  const { check: _check, holdOut: _holdOut, ...trained } = sft;
  return sft.holdOut ? sft : trained;
}

/** The config's plain values (tools and rewards by name), for hashing and for run.json. */
export function hashable(config: TrainingConfig): Record<string, unknown> {
  // Without MCP servers the record (and so the hash: resume) is what it was before they existed; so too without dynamic sampling.
  const { mcpServers, ...rest } = config;
  const { dynamicSampling, ...algorithm } = config.algorithm;
  const { stop, ...rollout } = config.rollout; // likewise without stop strings
  return {
    ...rest,
    ...(config.sft ? { sft: trainedSft(config.sft) } : {}),
    algorithm: dynamicSampling.enabled ? config.algorithm : algorithm,
    tools: config.tools.map((t) => t.name),
    ...(config.agent !== undefined
      ? { agent: typeof config.agent === 'function' ? `function ${config.agent.name}` : config.agent }
      : {}),
    ...(Object.keys(mcpServers).length ? { mcpServers: recordableServers(mcpServers) } : {}),
    rewards: {
      outcome: config.rewards.outcome.map((r) => r.name),
      process: config.rewards.process?.map((r) => r.name) ?? [],
      combine: config.rewards.combine ?? 'weighted-sum',
      ...rewardSettings(config.rewards),
    },
    data: { train: config.data.train, eval: config.data.eval },
    rollout: {
      ...rollout,
      ...(stop.length ? { stop } : {}),
      format: config.rollout.format ? config.rollout.format.constructor.name : 'hermes',
    },
  };
}
