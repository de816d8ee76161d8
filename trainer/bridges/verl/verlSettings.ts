import { lossScaleFactor } from '../../pipeline/training/config/configOptions';
import { CriticSection, type TrainingConfig } from '../../pipeline/training/config/trainingConfig';
import { evaluationEvery } from '../../pipeline/training/evaluation/evaluationSchedule';

/**
 * Our config's settings as verl's Hydra overrides, each with where it comes from, plus every
 * setting verl cannot express and why. Keys are verl's (github.com/volcengine/verl at commit
 * b178a3cd56f58b2d502255daba591e92833930a7): verl/trainer/config/ppo_trainer.yaml and the files it
 * composes — actor/actor.yaml, rollout/rollout.yaml (multi_turn, agent, val_kwargs),
 * optim/fsdp.yaml, data/legacy_data.yaml, critic/critic.yaml, algorithm (core_algos.py's
 * AdvantageEstimator and kl_penalty names). The test checks every key against a list taken from
 * _generated_ppo_trainer.yaml at that commit (test/fixtures/verl/ppo_trainer_keys.txt).
 */

export type HydraValue = string | number | boolean | readonly (string | number)[];

export interface MappedSetting {
  /** Our setting, as the config spells it. */
  setting: string;
  key: string;
  value: HydraValue;
  /** How the value was derived, when it is not the same number. */
  note?: string;
}

export interface UnmappedSetting {
  setting: string;
  value: string;
  why: string;
}

export interface SettingsMapping {
  mapped: MappedSetting[];
  unmapped: UnmappedSetting[];
}

const ESTIMATORS: Record<Exclude<TrainingConfig['algorithm']['name'], 'rft'>, string> = {
  ppo: 'gae',
  grpo: 'grpo',
  // Dr. GRPO is verl's grpo estimator without the std and with the seq-mean-token-sum-norm loss (https://github.com/volcengine/verl/blob/main/docs/algo/grpo.md).
  'dr-grpo': 'grpo',
  'reinforce++': 'reinforce_plus_plus',
  'reinforce++-baseline': 'reinforce_plus_plus_baseline',
  rloo: 'rloo',
};

/** verl's names of the KL estimators (core_algos.py kl_penalty_forward: "kl"/k1, "mse"/k2, "low_var_kl"/k3). */
const KL_NAMES = { k1: 'kl', k2: 'mse', k3: 'low_var_kl' } as const;

/** verl cuts tool results by characters (max_tool_response_length), we by tokens: about 4 characters a token. */
export const CHARS_PER_TOKEN = 4;

type MapSetting = (setting: string, key: string, value: HydraValue, note?: string) => void;
type SkipSetting = (setting: string, value: unknown, why: string) => void;

export function mapSettings(config: TrainingConfig): SettingsMapping {
  const mapped: MappedSetting[] = [];
  const unmapped: UnmappedSetting[] = [];
  const map: MapSetting = (setting, key, value, note) => {
    mapped.push({ setting, key, value, ...(note ? { note } : {}) });
  };
  const skip: SkipSetting = (setting, value, why) => {
    unmapped.push({ setting, value: typeof value === 'string' ? value : JSON.stringify(value), why });
  };
  // One section after another: the lists keep this order, and the exported launch script with them.
  mapAlgorithm(config, map, skip);
  mapRollout(config, map, skip);
  mapOptimization(config, map, skip);
  mapModelAndSchedule(config, map);
  skipUnexpressible(config, skip);
  return { mapped, unmapped };
}

/** algorithm.* (and PPO's critic): the estimator, clipping, KL, loss aggregation and epochs. */
function mapAlgorithm(config: TrainingConfig, map: MapSetting, skip: SkipSetting): void {
  const a = config.algorithm;
  const r = config.rollout;
  if (a.name === 'rft')
    throw new Error(
      "algorithm.name: verl's PPO trainer has no rejection-sampling fine-tuning (rft); export a config with another algorithm",
    );

  map('algorithm.name', 'algorithm.adv_estimator', ESTIMATORS[a.name]);
  map('algorithm.groupSize', 'actor_rollout_ref.rollout.n', a.groupSize);
  map('algorithm.scaleByStd', 'algorithm.norm_adv_by_std_in_grpo', a.scaleByStd);
  map('algorithm.gamma', 'algorithm.gamma', a.gamma);
  map('algorithm.lambda', 'algorithm.lam', a.lambda);
  map('algorithm.clipLow', 'actor_rollout_ref.actor.clip_ratio_low', a.clipLow);
  map('algorithm.clipHigh', 'actor_rollout_ref.actor.clip_ratio_high', a.clipHigh);
  if (a.dualClip !== undefined) map('algorithm.dualClip', 'actor_rollout_ref.actor.clip_ratio_c', a.dualClip);
  if (a.kl.mode === 'loss') {
    map(
      'algorithm.kl.mode',
      'actor_rollout_ref.actor.use_kl_loss',
      a.kl.coef > 0,
      'KL as a loss term when its coefficient is above 0',
    );
    map('algorithm.kl.coef', 'actor_rollout_ref.actor.kl_loss_coef', a.kl.coef);
    map('algorithm.kl.estimator', 'actor_rollout_ref.actor.kl_loss_type', KL_NAMES[a.kl.estimator]);
    map('algorithm.kl.mode', 'algorithm.use_kl_in_reward', false);
  } else {
    map('algorithm.kl.mode', 'algorithm.use_kl_in_reward', true);
    map('algorithm.kl.coef', 'algorithm.kl_ctrl.kl_coef', a.kl.coef);
    map('algorithm.kl.estimator', 'algorithm.kl_penalty', KL_NAMES[a.kl.estimator]);
    map('algorithm.kl.mode', 'actor_rollout_ref.actor.use_kl_loss', false);
  }
  map('algorithm.entropyCoef', 'actor_rollout_ref.actor.entropy_coeff', a.entropyCoef);
  map('algorithm.aggregation', 'actor_rollout_ref.actor.loss_agg_mode', a.aggregation);
  const scale = lossScaleFactor(config);
  if (scale !== undefined) {
    map(
      'algorithm.lossScaleFactor',
      'actor_rollout_ref.actor.loss_scale_factor',
      scale,
      "verl divides the batch's token sums by it; we also divide by the number of sequences (Dr. GRPO's mean over the group), a constant factor Adam absorbs",
    );
  }
  map('algorithm.epochs', 'actor_rollout_ref.actor.ppo_epochs', a.epochs);
  map(
    'algorithm.miniBatches',
    'actor_rollout_ref.actor.ppo_mini_batch_size',
    Math.max(1, Math.floor(r.promptsPerStep / a.miniBatches)),
    'prompts per mini-batch: promptsPerStep / miniBatches (verl counts prompts, each with its n samples)',
  );
  if (a.name === 'ppo') mapCritic(config, map, skip);
  if (a.lossMask === 'response')
    skip(
      'algorithm.lossMask',
      a.lossMask,
      'verl always trains on the tokens the policy generated (response_mask); training on tool results is our ablation only',
    );
}

/** rollout.*: the batch, sampling, the token budget, the call format and the prompt. */
function mapRollout(config: TrainingConfig, map: MapSetting, skip: SkipSetting): void {
  const r = config.rollout;
  const b = r.budget;
  map('rollout.promptsPerStep', 'data.train_batch_size', r.promptsPerStep);
  map('rollout.temperature', 'actor_rollout_ref.rollout.temperature', r.temperature);
  map('rollout.topP', 'actor_rollout_ref.rollout.top_p', r.topP);
  map(
    'rollout.topK',
    'actor_rollout_ref.rollout.top_k',
    r.topK === 0 ? -1 : r.topK,
    r.topK === 0 ? 'our 0 (no top-k) is -1 in vLLM and SGLang' : undefined,
  );
  map('rollout.budget.maxTurns', 'actor_rollout_ref.rollout.multi_turn.max_assistant_turns', b.maxTurns);
  map(
    'rollout.budget.maxTotalTokens',
    'data.max_response_length',
    b.maxTotalTokens,
    'verl limits the response (every turn after the prompt, tool results included) separately from the prompt; both get the whole budget',
  );
  map('rollout.budget.maxTotalTokens', 'data.max_prompt_length', b.maxTotalTokens);
  map(
    'rollout.budget.maxToolResultTokens',
    'actor_rollout_ref.rollout.multi_turn.max_tool_response_length',
    b.maxToolResultTokens * CHARS_PER_TOKEN,
    `verl cuts tool results by characters: ${CHARS_PER_TOKEN} per token`,
  );
  skip(
    'rollout.budget.maxNewTokensPerTurn',
    b.maxNewTokensPerTurn,
    'verl has no per-turn limit on generated tokens; a turn ends at the end-of-turn token or when the response budget is spent',
  );
  if (r.format === undefined || r.format.name === 'hermes')
    map('rollout.format', 'actor_rollout_ref.rollout.multi_turn.format', 'hermes');
  else
    skip(
      'rollout.format',
      r.format.name,
      'verl parses calls with its own tool parsers (hermes, gpt-oss); this format has none there',
    );
  if (r.stop.length)
    skip(
      'rollout.stop',
      r.stop,
      "verl's rollout config has no stop strings (its vLLM/SGLang sampling parameters are temperature, top_p and top_k); a turn ends at the end-of-turn token",
    );
  if (r.templateKwargs)
    map(
      'rollout.templateKwargs',
      'data.apply_chat_template_kwargs',
      `{${Object.entries(r.templateKwargs)
        .map(([k, v]) => `${k}:${JSON.stringify(v)}`)
        .join(',')}}`,
      'a Hydra dict',
    );
  if (r.systemPrompt !== undefined)
    map('rollout.systemPrompt', '(dataset)', 'in each prompt', 'written into the Parquet prompts as the first message');
}

/** optimization.*: the actor's optimizer and schedule. */
function mapOptimization(config: TrainingConfig, map: MapSetting, skip: SkipSetting): void {
  const o = config.optimization;
  map('optimization.lr', 'actor_rollout_ref.actor.optim.lr', o.lr);
  map('optimization.warmupSteps', 'actor_rollout_ref.actor.optim.lr_warmup_steps', o.warmupSteps);
  if (o.schedule === 'linear')
    skip('optimization.schedule', o.schedule, 'verl schedules are constant or cosine (optim lr_scheduler_type)');
  else map('optimization.schedule', 'actor_rollout_ref.actor.optim.lr_scheduler_type', o.schedule);
  map('optimization.minLrRatio', 'actor_rollout_ref.actor.optim.min_lr_ratio', o.minLrRatio);
  map('optimization.weightDecay', 'actor_rollout_ref.actor.optim.weight_decay', o.weightDecay);
  map('optimization.maxGradNorm', 'actor_rollout_ref.actor.optim.clip_grad', o.maxGradNorm);
  map('optimization.beta1, beta2', 'actor_rollout_ref.actor.optim.betas', [o.beta1, o.beta2]);
  skip('optimization.eps', o.eps, "verl's optimizer config has no eps (torch's AdamW default 1e-8 is used)");
  map(
    'optimization.microBatchSize',
    'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu',
    o.microBatchSize,
    'per GPU in verl',
  );
}

/** LoRA, the step count, the seed, evaluation and checkpoint frequency. */
function mapModelAndSchedule(config: TrainingConfig, map: MapSetting): void {
  if (config.model.lora !== false) {
    map('model.lora.rank', 'actor_rollout_ref.model.lora_rank', config.model.lora.rank);
    map('model.lora.alpha', 'actor_rollout_ref.model.lora_alpha', config.model.lora.alpha);
    map('model.lora.targets', 'actor_rollout_ref.model.target_modules', config.model.lora.targets);
  }
  map('steps', 'trainer.total_training_steps', config.steps);
  map('seed', 'data.seed', config.seed);
  map(
    'evaluation.every',
    'trainer.test_freq',
    evaluationEvery(config, config.steps) > 0 ? evaluationEvery(config, config.steps) : -1,
  );
  map('evaluation.temperature', 'actor_rollout_ref.rollout.val_kwargs.temperature', config.evaluation.temperature);
  map('evaluation.temperature', 'actor_rollout_ref.rollout.val_kwargs.do_sample', config.evaluation.temperature > 0);
  map(
    'output.checkpointEvery',
    'trainer.save_freq',
    config.output.checkpointEvery > 0 ? config.output.checkpointEvery : -1,
  );
}

/** The settings verl cannot express, each with why. */
function skipUnexpressible(config: TrainingConfig, skip: SkipSetting): void {
  const b = config.rollout.budget;
  if (config.sft)
    skip(
      'sft',
      'configured',
      "verl's PPO trainer has no warm start; run verl's SFT trainer (verl.trainer.fsdp_sft_trainer) first and point model.path at its output",
    );
  if (config.evaluation.samples !== undefined)
    skip(
      'evaluation.samples',
      config.evaluation.samples,
      'verl evaluates the whole validation set (data.val_max_samples limits the rows read instead)',
    );
  skip('device', config.device, 'verl runs on the GPUs of its Ray cluster (trainer.n_gpus_per_node, trainer.nnodes)');
  skip(
    'output.keepCheckpoints',
    config.output.keepCheckpoints,
    'verl keeps trainer.max_actor_ckpt_to_keep checkpoints; set it by hand if needed',
  );
  skip('nonFinite.maxConsecutive', config.nonFinite.maxConsecutive, 'verl has no skip-and-count of non-finite updates');
  skip(
    'rewards (per-call placement)',
    "process rewards on their calls' tokens",
    "verl puts a trajectory's whole reward on its last token (the reward managers' reward_tensor[i, length - 1]); process rewards reach verl summed into the total",
  );
  if (config.rewards.combine === 'agent-r1')
    skip(
      'rewards.combine',
      'agent-r1',
      'normalised over the batch the reward manager scores at once: the launch script uses the batch reward manager, so that is the whole step, as here',
    );
  skip(
    "rollout.budget.maxTurns (the last turn's calls)",
    b.maxTurns,
    "our loop runs the calls of the last allowed turn and rewards them; verl's tool agent ends the episode there without running them, so the reward endpoint sees them unanswered",
  );
  skip(
    'toolArgs (per-row tool arguments)',
    "rows' toolArgs",
    "verl's MCP tools send only the call's arguments; served tools see no row (ctx.row is empty, ctx.rowArgs undefined)",
  );
}

/** PPO's critic: verl's is always a model of its own (critic.*), as our default `separate` one is. */
function mapCritic(config: TrainingConfig, map: MapSetting, skip: SkipSetting): void {
  const critic = config.critic ?? CriticSection.parse({});
  if (critic.network === 'shared') {
    skip(
      'critic.network',
      'shared',
      "verl's critic is always a model of its own with its own optimizer; a value head on the policy's network (and critic.valueCoef) has no verl equivalent",
    );
  }
  map('critic.lr', 'critic.optim.lr', critic.lr);
  map('critic.weightDecay', 'critic.optim.weight_decay', critic.weightDecay);
  map('critic.maxGradNorm', 'critic.optim.clip_grad', critic.maxGradNorm);
  map('critic.valueClip', 'critic.cliprange_value', critic.valueClip);
  map('critic.warmupSteps', 'trainer.critic_warmup', critic.warmupSteps);
  const lora = critic.lora ?? config.model.lora;
  map(
    'critic.lora',
    'critic.model.lora_rank',
    lora === false ? 0 : lora.rank,
    lora === false ? 'every weight trains: lora_rank 0' : undefined,
  );
  if (lora !== false) map('critic.lora.alpha', 'critic.model.lora_alpha', lora.alpha);
  if (critic.model !== undefined) map('critic.model', 'critic.model.path', critic.model);
  else
    skip(
      'critic.model',
      'the policy as RL starts',
      "verl starts the critic from critic.model.path: set it to the actor's starting model (the SFT output), as ours starts from the warm-started policy",
    );
}

/** A value as a Hydra override writes it (lists and dicts in Hydra's own syntax). */
export function hydraValue(value: HydraValue): string {
  if (Array.isArray(value)) return `[${value.map((v) => String(v)).join(',')}]`;
  return String(value);
}

/** `key=value` as one shell word. */
export function shellOverride(key: string, value: HydraValue): string {
  const word = `${key}=${hydraValue(value)}`;
  return /^[\w.\-/=,:+@]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
