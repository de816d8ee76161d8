import type { AdamWConfig } from '../../../foundations/engine/optimizer';
import type { ExecutionProviderName } from '../../../foundations/engine/runtime/providers';
import type { ChatTemplate } from '../../../foundations/models/text/chatTemplate';
import type { Policy, SamplingOptions } from '../../../foundations/models/generation/policy';
import type { BatchSettings } from '../../rl/prepareBatch';
import type { CriticOptions } from '../../rl/critic';
import type { PolicyTrainerOptions } from '../../rl/policyTrainer';
import type { SftOptions } from '../../rl/sft';
import type { AgentLoopOptions } from '../../rollout/agentLoop';
import { modelImages, type RolloutImages } from '../../rollout/images';
import type { ModelRuntime } from '../../../foundations/models/runtime';
import type { ToolSet } from '../../../foundations/tools/toolSet';
import type { ScheduleConfig } from '../step/schedule';
import type { TrainingConfig } from './trainingConfig';

/**
 * The training config turned into the options of the parts that do the work: the device, the
 * agent loop, the optimizers, the batch preparation, the learning-rate schedules. The one place
 * where a config field meets the component that obeys it — training, evaluation and the warm
 * start all read their options here.
 */

/** The execution provider to run on (`auto` is the CPU for now: see Check Environment for the others). */
export function providerFor(config: TrainingConfig, override?: ExecutionProviderName): ExecutionProviderName {
  return override ?? (config.device === 'auto' ? 'cpu' : config.device);
}

export function adamwOptions(config: TrainingConfig): AdamWConfig {
  const o = config.optimization;
  return { beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: o.weightDecay, maxGradNorm: o.maxGradNorm };
}

/** The agent loop's options but its sampling and observer, which training and evaluation choose. */
export function agentLoopOptions(
  config: TrainingConfig,
  parts: { policy: Policy; template: ChatTemplate; tools: ToolSet },
): Omit<AgentLoopOptions, 'sampling'> {
  const r = config.rollout;
  return {
    ...parts,
    budget: r.budget,
    ...(r.format ? { format: r.format } : {}),
    ...(r.systemPrompt ? { systemPrompt: r.systemPrompt } : {}),
    ...(r.templateKwargs ? { templateKwargs: r.templateKwargs } : {}),
    constrainCalls: r.constrainToolCalls,
    ...(r.stop.length ? { stop: r.stop } : {}),
  };
}

/** How training rollouts sample. */
export function rolloutSampling(config: TrainingConfig): SamplingOptions {
  return { temperature: config.rollout.temperature, topP: config.rollout.topP, topK: config.rollout.topK };
}

/** How evaluations sample (greedy by default). */
export function evaluationSampling(
  config: TrainingConfig,
  temperature = config.evaluation.temperature,
): SamplingOptions {
  return { temperature, topP: 1, topK: 0 };
}

/** Dr. GRPO's constant C: the config's, or the most tokens a trajectory can generate (every turn at its limit, within the total budget). */
export function lossScaleFactor(config: TrainingConfig): number | undefined {
  const a = config.algorithm;
  if (a.aggregation !== 'seq-mean-token-sum-norm') return undefined;
  const b = config.rollout.budget;
  return a.lossScaleFactor ?? Math.min(b.maxTurns * b.maxNewTokensPerTurn, b.maxTotalTokens);
}

/** PPO's critic is a value head on the policy's own network (`critic.network: 'shared'`). */
export function sharedCritic(config: TrainingConfig): boolean {
  return config.algorithm.name === 'ppo' && config.critic?.network === 'shared';
}

/** PPO's critic is a network of its own (the default). */
export function separateCritic(config: TrainingConfig): boolean {
  return config.algorithm.name === 'ppo' && config.critic?.network !== 'shared';
}

export function policyTrainerOptions(config: TrainingConfig): PolicyTrainerOptions {
  const a = config.algorithm;
  const scale = lossScaleFactor(config);
  return {
    policy: {
      // RFT is SFT on its kept samples: the plain likelihood, no ratio to clip.
      ...(a.name === 'rft' ? { surrogate: 'log-likelihood' as const } : {}),
      clipLow: a.clipLow,
      clipHigh: a.clipHigh,
      ...(a.dualClip !== undefined ? { dualClip: a.dualClip } : {}),
      aggregation: a.aggregation,
      ...(scale !== undefined ? { lossScaleFactor: scale } : {}),
      klCoef: a.kl.mode === 'loss' ? a.kl.coef : 0,
      klEstimator: a.kl.estimator,
      entropyCoef: a.entropyCoef,
    },
    ...(sharedCritic(config)
      ? {
          value: {
            coef: config.critic!.valueCoef,
            clip: config.critic!.valueClip,
            aggregation: a.aggregation,
            ...(scale !== undefined ? { lossScaleFactor: scale } : {}),
          },
        }
      : {}),
    adamw: adamwOptions(config),
    temperature: config.rollout.temperature,
    miniBatches: a.miniBatches,
    epochs: a.epochs,
    microBatchSize: config.optimization.microBatchSize,
    gradientCheckpointing: config.optimization.gradientCheckpointing,
    fullFineTuning: config.model.lora === false,
    reference: a.kl.coef > 0,
    constrained: config.rollout.constrainToolCalls,
  };
}

/** How a scored batch becomes training sequences (loss mask, KL, advantage estimator). */
export function batchSettings(config: TrainingConfig): BatchSettings {
  const a = config.algorithm;
  return { lossMask: a.lossMask, kl: a.kl, estimator: a };
}

export function sftOptions(config: TrainingConfig): SftOptions {
  const sft = config.sft!;
  return {
    adamw: adamwOptions(config),
    batchSize: sft.batchSize,
    microBatchSize: config.optimization.microBatchSize,
    gradientCheckpointing: config.optimization.gradientCheckpointing,
    fullFineTuning: config.model.lora === false,
  };
}

/** The optimizer steps an RL step plans (its update's epochs × mini-batches): the unit the RL schedules count in. */
export function optimizerStepsPerRlStep(config: TrainingConfig): number {
  return config.algorithm.epochs * config.algorithm.miniBatches;
}

/** The RL learning-rate schedule (counted in optimizer steps: schedule.ts optimizerStepRates). */
export function rlSchedule(config: TrainingConfig): ScheduleConfig {
  const o = config.optimization;
  return { lr: o.lr, warmupSteps: o.warmupSteps, schedule: o.schedule, minLrRatio: o.minLrRatio };
}

/** The warm start's schedule: warm-up, then cosine to a tenth (over the whole curriculum). */
export function sftSchedule(config: TrainingConfig): ScheduleConfig {
  const sft = config.sft!;
  return { lr: sft.lr, warmupSteps: sft.warmupSteps, schedule: 'cosine', minLrRatio: 0.1 };
}

/** A separate critic's options: its own network, optimizer, learning rate and clipping (`critic` in the config). */
export function criticOptions(config: TrainingConfig, resolve: (p: string) => string): CriticOptions {
  const c = config.critic!;
  const o = config.optimization;
  const lora = c.lora ?? config.model.lora;
  return {
    ...(c.model !== undefined ? { modelDir: resolve(c.model) } : {}),
    ...(lora !== false ? { lora } : {}),
    adamw: { beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: c.weightDecay, maxGradNorm: c.maxGradNorm },
    // verl's critic.loss_agg_mode follows the actor's.
    value: {
      clip: c.valueClip,
      aggregation: config.algorithm.aggregation,
      ...(lossScaleFactor(config) !== undefined ? { lossScaleFactor: lossScaleFactor(config) } : {}),
    },
    miniBatches: config.algorithm.miniBatches,
    epochs: config.algorithm.epochs,
    microBatchSize: o.microBatchSize,
    gradientCheckpointing: o.gradientCheckpointing,
    seed: config.seed,
  };
}

/** The critic's learning-rate schedule: its own rate, the run's warm-up and shape. */
export function criticSchedule(config: TrainingConfig): ScheduleConfig {
  return { ...rlSchedule(config), lr: config.critic!.lr };
}

/** Whether the policy updates at this step: not during a separate critic's warm-up (only the critic trains then). */
export function policyUpdates(config: TrainingConfig, step: number): boolean {
  return !(separateCritic(config) && step <= config.critic!.warmupSteps);
}

/** How the agent loops read and prepare images: the model's vision tower and image processor, if it has one. */
export function rolloutImagesFor(model: ModelRuntime, config: TrainingConfig): RolloutImages {
  return modelImages(model.folder, config.rollout.budget.maxImagePixels);
}
