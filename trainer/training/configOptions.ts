import type { AdamWConfig } from '../engine/optimizer';
import type { ExecutionProviderName } from '../engine/runtime/providers';
import type { ChatTemplate } from '../models/chatTemplate';
import type { Policy, SamplingOptions } from '../models/generation/policy';
import type { BatchSettings } from '../rl/prepareBatch';
import type { PolicyTrainerOptions } from '../rl/policyTrainer';
import type { SftOptions } from '../rl/sft';
import type { AgentLoopOptions } from '../rollout/agentLoop';
import type { ToolSet } from '../tools/toolSet';
import type { ScheduleConfig } from './schedule';
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
export function agentLoopOptions(config: TrainingConfig, parts: { policy: Policy; template: ChatTemplate; tools: ToolSet }): Omit<AgentLoopOptions, 'sampling'> {
  const r = config.rollout;
  return {
    ...parts,
    budget: r.budget,
    ...(r.format ? { format: r.format } : {}),
    ...(r.systemPrompt ? { systemPrompt: r.systemPrompt } : {}),
    ...(r.templateKwargs ? { templateKwargs: r.templateKwargs } : {}),
  };
}

/** How training rollouts sample. */
export function rolloutSampling(config: TrainingConfig): SamplingOptions {
  return { temperature: config.rollout.temperature, topP: config.rollout.topP, topK: config.rollout.topK };
}

/** How evaluations sample (greedy by default). */
export function evaluationSampling(config: TrainingConfig, temperature = config.evaluation.temperature): SamplingOptions {
  return { temperature, topP: 1, topK: 0 };
}

export function policyTrainerOptions(config: TrainingConfig): PolicyTrainerOptions {
  const a = config.algorithm;
  return {
    policy: {
      clipLow: a.clipLow,
      clipHigh: a.clipHigh,
      ...(a.dualClip !== undefined ? { dualClip: a.dualClip } : {}),
      aggregation: a.aggregation,
      klCoef: a.kl.mode === 'loss' ? a.kl.coef : 0,
      klEstimator: a.kl.estimator,
      entropyCoef: a.entropyCoef,
    },
    ...(a.name === 'ppo' ? { value: { coef: a.valueCoef, clip: a.valueClip, aggregation: a.aggregation } } : {}),
    adamw: adamwOptions(config),
    temperature: config.rollout.temperature,
    miniBatches: a.miniBatches,
    epochs: a.epochs,
    microBatchSize: config.optimization.microBatchSize,
    fullFineTuning: config.model.lora === false,
    reference: a.kl.coef > 0,
  };
}

/** How a scored batch becomes training sequences (loss mask, KL, advantage estimator). */
export function batchSettings(config: TrainingConfig): BatchSettings {
  const a = config.algorithm;
  return { lossMask: a.lossMask, kl: a.kl, estimator: a };
}

export function sftOptions(config: TrainingConfig): SftOptions {
  const sft = config.sft!;
  return { adamw: adamwOptions(config), batchSize: sft.batchSize, microBatchSize: config.optimization.microBatchSize, fullFineTuning: config.model.lora === false };
}

/** The RL learning-rate schedule (over the run's steps). */
export function rlSchedule(config: TrainingConfig): ScheduleConfig {
  const o = config.optimization;
  return { lr: o.lr, warmupSteps: o.warmupSteps, schedule: o.schedule, minLrRatio: o.minLrRatio };
}

/** The warm start's schedule: warm-up, then cosine to a tenth (over the whole curriculum). */
export function sftSchedule(config: TrainingConfig): ScheduleConfig {
  const sft = config.sft!;
  return { lr: sft.lr, warmupSteps: sft.warmupSteps, schedule: 'cosine', minLrRatio: 0.1 };
}

/** Whether this step is one of PPO's critic warm-up steps (the policy loss is off). */
export function policyLossWeight(config: TrainingConfig, step: number): number {
  return config.algorithm.name === 'ppo' && step <= config.algorithm.criticWarmupSteps ? 0 : 1;
}
