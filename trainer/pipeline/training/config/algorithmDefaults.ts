import type { KlEstimator } from '../../rl/kl';
import type { LossAggregation } from '../../rl/losses';
import { RFT_DEFAULT_THRESHOLD } from '../../rl/advantages';

/**
 * Each algorithm's defaults, so that a config naming only the algorithm runs what the name says.
 * Every value follows the algorithm's paper or verl's config (github.com/volcengine/verl at
 * b178a3cd, verl/trainer/config/ppo_trainer.yaml and the files it composes, docs/algo/*.md,
 * examples/*_trainer/*.sh); the table in trainer/pipeline/rl/ADVANTAGES.md cites each one. A value the
 * config sets wins; an unset one comes from here.
 */
export interface AlgorithmDefaults {
  scaleByStd: boolean;
  gamma: number;
  lambda: number;
  clipLow: number;
  clipHigh: number;
  kl: { coef: number; estimator: KlEstimator; mode: 'loss' | 'reward' };
  aggregation: LossAggregation;
  /** RFT: the outcome reward a trajectory needs to be trained on (the others ignore it). */
  rftThreshold: number;
  /** Dynamic sampling (DAPO): drop groups whose rewards are all equal and roll out fresh prompts in their place. */
  dynamicSampling: boolean;
}

export type RlAlgorithm = 'ppo' | 'grpo' | 'dr-grpo' | 'reinforce++' | 'reinforce++-baseline' | 'rloo' | 'rft';

/**
 * The estimators whose baseline is the group's own rewards: a group whose rewards are all equal
 * gets exactly zero advantage from them, so dynamic sampling applies. (PPO's critic and
 * REINFORCE++'s batch whitening still give such a group a non-zero advantage.)
 */
export const GROUP_BASELINE_ALGORITHMS = [
  'grpo',
  'dr-grpo',
  'rloo',
  'reinforce++-baseline',
] as const satisfies readonly RlAlgorithm[];

/**
 * Rollout rounds per step with dynamic sampling, the first included. DAPO's own runs allow 10
 * generation batches of 3× the prompts (verl recipe/dapo/run_dapo_qwen2.5_32b.sh:
 * max_num_gen_batches=10, gen_prompt_bsz = 3 × train_prompt_bsz); on a CPU a step's rollout is
 * most of its time, so the bound here is 3 rounds of at most `promptsPerStep` prompts each.
 */
export const DYNAMIC_SAMPLING_MAX_ROUNDS = 3;

/** verl: actor.clip_ratio_low / clip_ratio_high 0.2, algorithm.gamma 1.0, algorithm.lam 1.0, actor.loss_agg_mode token-mean. */
const COMMON = {
  scaleByStd: true,
  gamma: 1,
  lambda: 1,
  clipLow: 0.2,
  clipHigh: 0.2,
  aggregation: 'token-mean',
  rftThreshold: RFT_DEFAULT_THRESHOLD,
  dynamicSampling: false,
} as const;

/** The group-baseline estimators' dynamic sampling default (see GROUP_BASELINE_ALGORITHMS; the measurement behind it is in trainer/pipeline/rl/ADVANTAGES.md). */
const GROUP_DYNAMIC_SAMPLING = false;

/** KL in the reward, k1 (verl's `kl`), β 0.001: algorithm.use_kl_in_reward=True with kl_penalty kl and kl_ctrl.kl_coef 0.001. */
const KL_IN_REWARD = { coef: 0.001, estimator: 'k1', mode: 'reward' } as const;

export const ALGORITHM_DEFAULTS: Record<RlAlgorithm, AlgorithmDefaults> = {
  // PPO: no KL term (algorithm.use_kl_in_reward False, actor.use_kl_loss False); a coefficient set later goes into the reward (InstructGPT's placement).
  ppo: { ...COMMON, kl: { coef: 0, estimator: 'k1', mode: 'reward' } },
  // GRPO: KL as a loss, k3, 0.001 (verl's https://github.com/volcengine/verl/blob/main/docs/algo/grpo.md: use_kl_loss True, kl_loss_coef 0.001, kl_loss_type low_var_kl); std normalisation on (norm_adv_by_std_in_grpo True).
  grpo: { ...COMMON, dynamicSampling: GROUP_DYNAMIC_SAMPLING, kl: { coef: 0.001, estimator: 'k3', mode: 'loss' } },
  // Dr. GRPO: no std, no KL, the constant length normaliser (the same verl doc, "DrGRPO"; Liu et al. 2025, §3.1).
  'dr-grpo': {
    ...COMMON,
    dynamicSampling: GROUP_DYNAMIC_SAMPLING,
    scaleByStd: false,
    kl: { coef: 0, estimator: 'k3', mode: 'loss' },
    aggregation: 'seq-mean-token-sum-norm',
  },
  // REINFORCE++: token-level KL in the reward against the reference (Hu et al. 2025, §3; examples/reinforce_plus_plus_trainer/run_qwen2-7b_math_rf.sh).
  'reinforce++': { ...COMMON, kl: KL_IN_REWARD },
  // REINFORCE++-baseline: the same KL (examples/reinforce_plus_plus_trainer/run_qwen2-7b_math_rf_baseline.sh).
  'reinforce++-baseline': { ...COMMON, dynamicSampling: GROUP_DYNAMIC_SAMPLING, kl: KL_IN_REWARD },
  // RLOO: KL in the reward (Ahmadian et al. 2024, §3; examples/rloo_trainer/run_qwen2-7b.sh).
  rloo: { ...COMMON, dynamicSampling: GROUP_DYNAMIC_SAMPLING, kl: KL_IN_REWARD },
  // RFT: SFT on the correct samples — no KL (RAFT, Dong et al. 2023; STaR, Zelikman et al. 2022; ReST-EM, Singh et al. 2023 fine-tune
  // on the filtered samples with the plain likelihood), token-mean as the warm start's SFT; no ratio, so clipLow/High do nothing.
  rft: { ...COMMON, scaleByStd: false, kl: { coef: 0, estimator: 'k3', mode: 'loss' } },
};

/** The critic's defaults (PPO): verl's critic/critic.yaml and optim/fsdp.yaml, and trainer.critic_warmup. */
export const CRITIC_DEFAULTS = {
  /** critic.optim.lr */
  lr: 1e-5,
  /** critic.optim.weight_decay */
  weightDecay: 0.01,
  /** critic.optim.clip_grad */
  maxGradNorm: 1,
  /** critic.cliprange_value */
  valueClip: 0.5,
  /** trainer.critic_warmup */
  warmupSteps: 0,
} as const;

/** The shared-trunk critic's value-loss weight in the policy's loss (the classic PPO c₁ = 0.5; verl has none: its critic is separate). */
export const SHARED_VALUE_COEF = 0.5;
