import { z } from 'zod';
import { PROTOCOL_VERSION } from './protocolVersion';

/**
 * The run store: `<workspace>/.rollout/runs/<run-id>/`, the source of truth for everything the
 * panels and the debugger show. Append-only, one JSON record per line, flushed per step.
 *
 *   run.json                    RunRecord (rewritten atomically when the status changes)
 *   metrics.jsonl               one MetricsRecord per step (and per evaluation)
 *   rollouts/step-NNNNNN.jsonl  one TrajectoryRecord per trajectory of that step
 *   evals/step-NNNNNN.jsonl     one TrajectoryRecord per held-out row of the evaluation after
 *                               step NNNNNN (000000: before RL), written whole when it ends
 *   checkpoints/step-NNNNNN/    a Hugging Face folder plus trainer_state.json
 *   checkpoints/best/           the same, of the step whose held-out evaluation was the best (RunRecord.best)
 *   cassette.jsonl              CassetteEntry per tool call, when the run records its tools (protocol/cassetteFile.ts)
 *   branches/<id>.json          BranchSet: re-rolls of a recorded trajectory (protocol/branches.ts), never training data
 *   run.lock                    RunLockRecord: the process writing the run (while it runs)
 */

/**
 * `interrupted` is never written: a reader shows a `running` run as interrupted when the process
 * that held it is gone (killed, crashed, its machine restarted) — see runstore/runLock.ts.
 */
export const RunStatus = z.enum(['running', 'finished', 'failed', 'stopped', 'interrupted']);
export type RunStatus = z.infer<typeof RunStatus>;

export const Algorithm = z.enum([
  'ppo',
  'grpo',
  'dr-grpo',
  'reinforce++',
  'reinforce++-baseline',
  'rloo',
  'rft',
  'sft',
]);
export type Algorithm = z.infer<typeof Algorithm>;

/**
 * How a run's sampled rollout rounds were split into generate calls, which decides every random
 * draw (a generation session draws one uniform per row per decoding step): `per-round`, one call
 * per round, each turn with its own token limit; `per-limit`, one call per distinct token limit,
 * largest first — what every run recorded before the field existed did.
 */
export const DrawSchedule = z.enum(['per-limit', 'per-round']);
export type DrawSchedule = z.infer<typeof DrawSchedule>;

export const RunRecord = z.object({
  protocol: z.literal(PROTOCOL_VERSION),
  id: z.string().min(1),
  name: z.string(),
  status: RunStatus,
  createdAt: z.string(),
  endedAt: z.string().optional(),
  /** When status is `failed`: what happened, and at which step. */
  error: z.object({ message: z.string(), stack: z.string().optional(), step: z.number().int().optional() }).optional(),
  algorithm: Algorithm,
  device: z.string(),
  seed: z.number().int(),
  /** Steps the run was asked for, and the last step whose records are complete. */
  totalSteps: z.number().int().nonnegative(),
  lastStep: z.number().int().nonnegative().optional(),
  /** Relative path of the newest checkpoint folder, e.g. `checkpoints/step-000010`. */
  lastCheckpoint: z.string().optional(),
  model: z.object({
    path: z.string(),
    family: z.string(),
    parameters: z.number().int().nonnegative(),
    trainableParameters: z.number().int().nonnegative(),
    lora: z.object({ rank: z.number().int(), alpha: z.number(), targets: z.array(z.string()) }).optional(),
    /** QLoRA: the frozen base's quantization (bits per weight, weights per scale, codes read unpacked). */
    quantize: z
      .object({
        bits: z.union([z.literal(4), z.literal(8)]),
        blockSize: z.number().int(),
        lowMemory: z.boolean().optional(),
      })
      .optional(),
  }),
  versions: z.object({ rolloutStudio: z.string(), onnxruntime: z.string().optional(), node: z.string() }),
  /**
   * How its sampled rounds were split into generate calls (DrawSchedule). Absent in runs recorded
   * before it existed: those ran `per-limit`, and a resume or re-roll of them keeps it.
   */
  drawSchedule: DrawSchedule.optional(),
  /** The resolved training config, after defaults: what really ran. */
  config: z.record(z.string(), z.unknown()),
  /** Where the config came from (the user's file, absolute), for "open config" and restart. */
  configPath: z.string().optional(),
  /**
   * sha256 (hex) of the config file's bytes when the run started: `reroll` runs the recorded
   * config only while its file still matches (bridges/cli/commands/recordedConfig.ts). Runs
   * recorded before it existed have none.
   */
  configSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'expected 64 hex digits (a sha256)')
    .optional(),
  /**
   * The task metric: the name of the outcome reward whose mean is recorded as `score/<metric>`
   * (the config's `metric`, by default its first outcome reward). Runs recorded before it
   * existed have none; their score, if any, is `score/exact_match`.
   */
  metric: z.string().min(1).optional(),
  /**
   * The best held-out evaluation so far by the task metric, and the checkpoint that holds its
   * weights (`checkpoints/best`, kept beside the newest). Absent until a held-out evaluation ran.
   */
  best: z
    .object({
      step: z.number().int().nonnegative(),
      metric: z.string().min(1),
      value: z.number(),
      /** Relative path of the kept copy, e.g. `checkpoints/best`. */
      checkpoint: z.string().optional(),
    })
    .optional(),
});
export type RunRecord = z.infer<typeof RunRecord>;

/** The run's draw schedule; a run recorded before the field ran `per-limit`. */
export function recordedDrawSchedule(run: Pick<RunRecord, 'drawSchedule'>): DrawSchedule {
  return run.drawSchedule ?? 'per-limit';
}

/**
 * `run.lock`: the one process writing a run directory, created atomically when it starts (or
 * resumes) and removed when it ends. `heartbeatAt` is refreshed while it runs, so a holder on
 * another machine that stopped refreshing can be told from a live one.
 */
export const RunLockRecord = z.object({
  pid: z.number().int().positive(),
  host: z.string(),
  /** Linux: the process's start time in clock ticks since boot (/proc/<pid>/stat), to tell a reused process id. */
  processStart: z.string().optional(),
  command: z.string().optional(),
  startedAt: z.string(),
  heartbeatAt: z.string(),
});
export type RunLockRecord = z.infer<typeof RunLockRecord>;

/** The metrics key a task metric's value is recorded under. */
export function scoreKey(metric: string): string {
  return `score/${metric}`;
}

/** A run's task metric: its `metric`, or `exact_match` for runs recorded before runs named one (their only score was `score/exact_match`). */
export function runMetric(run: Pick<RunRecord, 'metric'>): string {
  return run.metric ?? 'exact_match';
}

/**
 * Metric names with a fixed meaning, so panels can chart them without guessing. A run may
 * record others (a reward function's own components as `reward/<name>`, a task score as
 * `score/<name>`); charts list those too.
 */
export const METRICS = {
  'reward/mean': 'mean total reward per trajectory',
  'reward/std': 'standard deviation of the total reward',
  'reward/min': 'smallest total reward',
  'reward/max': 'largest total reward',
  'reward/outcome_mean': 'mean outcome reward',
  'reward/process_mean': 'mean sum of process rewards per trajectory',
  'score/exact_match':
    'the task metric of a run whose metric is exact_match: the fraction of trajectories whose answer matches exactly (any other task metric is recorded as score/<its name>)',
  'kl/mean': 'mean per-token KL to the reference policy',
  'entropy/mean': 'mean per-token entropy of the policy',
  'loss/policy': 'policy-gradient loss',
  'loss/value': 'critic loss (PPO)',
  'loss/kl': 'KL penalty term of the loss',
  'loss/entropy': 'entropy bonus term of the loss',
  'loss/total': 'the loss that was minimised',
  'loss/sft': 'supervised loss (warm start)',
  'sft/check_calls':
    "warm start's check, after an epoch: share of the checked demonstrations' tool-call turns the model writes token for token (greedy, from the demonstration's own prefix)",
  'sft/check_turns': "warm start's check: the same for the demonstrations' other assistant turns (answers, plain text)",
  'sft/check_loss': "warm start's check: nats per trained token of the checked demonstrations",
  'clip/fraction': 'fraction of tokens whose ratio was clipped',
  'rft/kept_fraction':
    "RFT: fraction of the batch's trajectories whose outcome reward passed the threshold (only those are trained on)",
  'grad/norm': 'global gradient norm before clipping',
  lr: 'learning rate',
  'length/response_mean': 'mean policy tokens per trajectory',
  'length/total_mean': 'mean tokens per trajectory, prompt and tool results included',
  'tools/calls_per_trajectory': 'mean tool calls per trajectory',
  'tools/error_rate': 'fraction of tool calls that failed',
  'throughput/rollout_tokens_per_s': 'generated tokens per second during rollout',
  'throughput/update_tokens_per_s': 'trained tokens per second during the update',
  'time/rollout_s': 'seconds spent generating and running tools',
  'time/reward_s': 'seconds spent computing rewards',
  'time/update_s': 'seconds spent in the update',
  'time/step_s': 'seconds for the whole step',
  'health/zero_signal_groups':
    'fraction of groups whose every advantage was zero (no learning signal; for GRPO, groups whose rewards were all equal)',
  'health/truncated':
    'fraction of trajectories a length limit cut off (max_turn_tokens or max_total_tokens): answers never finished, or run on past their end',
  'health/dropped_groups': 'fraction of rolled-out groups dropped by dynamic sampling before the update',
  'rollout/rounds':
    'rollout rounds of the step: 1, or more when dynamic sampling rolled out fresh prompts to replace groups without signal',
  'rollout/groups': 'groups (prompts) rolled out in the step, every round included',
  'tools/parse_error_rate': 'fraction of tool calls that could not be read (not valid JSON, no name)',
  'tools/schema_error_rate':
    "fraction of tool calls whose arguments did not match the tool's schema, or named no known tool",
  'logprob/after_update':
    "mean log-prob of one trajectory's trained tokens under the updated policy (non-finite: the update diverged, and the run stopped)",
} as const;
export type KnownMetric = keyof typeof METRICS;

/** One finding of a step's health checks (training/health): a stable code, what was seen, what to try. */
export const HealthWarning = z.object({
  /** Stable identifier, e.g. `zero_signal`, `collapse`, `tool_errors`, `entropy_collapse`. */
  code: z.string().min(1),
  /** `warn`: worth a look; `critical`: the run is being damaged (a collapse). */
  severity: z.enum(['warn', 'critical']),
  /** What was seen, with the numbers: "14 of 16 groups had equal rewards: no learning signal". */
  message: z.string(),
  /** What to try: "raise rollout.temperature or algorithm.groupSize, or add harder prompts". */
  advice: z.string(),
  /** What the trainer did about it, if anything: "rolled back to checkpoints/best (step 24), lr 5e-5". */
  action: z.string().optional(),
});
export type HealthWarning = z.infer<typeof HealthWarning>;

export const MetricsRecord = z.object({
  step: z.number().int().nonnegative(),
  time: z.string(),
  /** `train` after an RL update, `eval` after a held-out evaluation, `sft` during the warm start. */
  kind: z.enum(['train', 'eval', 'sft']),
  /** Finite values only; a non-finite one is `null` here and named in `nonFinite`. */
  values: z.record(z.string(), z.number().nullable()),
  nonFinite: z.array(z.string()).optional(),
  /** Set when the update was skipped (a non-finite loss or gradient). */
  skipped: z.object({ reason: z.string() }).optional(),
  /**
   * "Is it learning?": what the step's health checks found (no signal in most groups, a collapse,
   * parse errors rising …), in plain words with what to try. Shown by the CLI, the status bar and
   * the Metrics panel.
   */
  warnings: z.array(HealthWarning).optional(),
});
export type MetricsRecord = z.infer<typeof MetricsRecord>;

/**
 * Why a tool call failed. Each becomes an observation the policy sees; none stops the batch.
 * `unrecorded`: replaying recorded tool results (a cassette), the call had no recording.
 */
export const ToolErrorKind = z.enum(['parse', 'unknown_tool', 'invalid_arguments', 'threw', 'timeout', 'unrecorded']);
export type ToolErrorKind = z.infer<typeof ToolErrorKind>;

export const ToolCallRecord = z.object({
  /** Position among the turn's calls. */
  index: z.number().int().nonnegative(),
  /** Undefined when the call could not be parsed far enough to know the name. */
  name: z.string().optional(),
  /** The arguments as parsed (already validated when no error), or undefined. */
  arguments: z.unknown().optional(),
  /** The call exactly as the policy wrote it. */
  raw: z.string(),
  /** The observation the policy was shown (a result or the error text), after truncation. */
  observation: z.string(),
  truncated: z.boolean().default(false),
  error: z.object({ kind: ToolErrorKind, message: z.string() }).optional(),
  latencyMs: z.number().nonnegative(),
  /** The call's process reward, before normalisation; undefined when none was computed. */
  processReward: z.number().optional(),
  /** Each named part of the process reward, unweighted (`tool:search`, `error_penalty`, a user function's name). */
  rewardComponents: z.record(z.string(), z.number()).optional(),
  /** Lines the tool logged while it ran (`info: …`, `warn: …`, `error: …`). */
  logs: z.array(z.string()).optional(),
  /** Token index (into the trajectory's ids) of the call's last token: where its process reward lands. */
  tokenEnd: z.number().int().nonnegative(),
  /** Images the tool returned that the policy saw: their sha256, as in the trajectory's `images`. */
  images: z.array(z.string().regex(/^[0-9a-f]{64}$/)).optional(),
  /**
   * Live snapshots only (a debugger hold), never in the run store: the call is parsed and
   * announced but has not run yet, so `observation` is empty and `latencyMs` 0.
   */
  pending: z.literal(true).optional(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

export const TurnRecord = z.object({
  index: z.number().int().nonnegative(),
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  /** The turn's text as decoded from its tokens. */
  text: z.string(),
  /** Half-open range [start, end) into the trajectory's token ids. */
  tokenStart: z.number().int().nonnegative(),
  tokenEnd: z.number().int().nonnegative(),
  /** Assistant turns: how generation stopped. */
  finish: z.enum(['tool_call', 'eos', 'stop', 'length']).optional(),
  toolCalls: z.array(ToolCallRecord).optional(),
  /** Assistant turns: statistics of the sampling log-probs and entropies of its tokens. */
  logprob: z.object({ mean: z.number(), min: z.number() }).optional(),
  entropy: z.object({ mean: z.number() }).optional(),
});
export type TurnRecord = z.infer<typeof TurnRecord>;

/** base64 of a little-endian typed array: compact, and exact for ids and float32 values. */
export const Base64Array = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'expected base64');

/**
 * An image a trajectory saw (vision-language models). The bytes are in the run directory at
 * `file` (`images/<sha256>.<format>`), written once however many trajectories saw the image.
 */
export const TrajectoryImageRecord = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  format: z.enum(['png', 'jpeg', 'webp']),
  /** Relative to the run directory. */
  file: z.string().regex(/^images\/[0-9a-f]{64}\.(png|jpeg|webp)$/),
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  /** Its `<|image_pad|>` tokens: [tokenStart, tokenStart + tokens) of the trajectory's ids. */
  tokenStart: z.number().int().nonnegative(),
  tokens: z.number().int().positive(),
  /** The prompt gave it, or a tool call (its turn index and position in the turn). */
  from: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('prompt') }),
    z.object({ kind: z.literal('tool'), turn: z.number().int().nonnegative(), call: z.number().int().nonnegative() }),
  ]),
});
export type TrajectoryImageRecord = z.infer<typeof TrajectoryImageRecord>;

/** Where an image's bytes live in a run directory. */
export function imageFileName(sha256: string, format: TrajectoryImageRecord['format']): string {
  return `images/${sha256}.${format}`;
}

export const TrajectoryRecord = z.object({
  step: z.number().int().nonnegative(),
  /** Position among the step's rollouts (with dynamic sampling, across its rounds, in order). */
  index: z.number().int().nonnegative(),
  /** The dataset row it started from and its position in the group (GRPO, RLOO). */
  rowId: z.string(),
  group: z.number().int().nonnegative(),
  sample: z.number().int().nonnegative(),
  /** The task as the user would name it: the last user message before generation. */
  prompt: z.string(),
  turns: z.array(TurnRecord),
  finishReason: z.enum(['answered', 'max_turns', 'max_total_tokens', 'max_turn_tokens', 'error']),
  /** With finishReason `error`: why the trajectory could not go on. */
  error: z.string().optional(),
  /**
   * Where the chat template rendered earlier turns differently once tool results followed
   * (Qwen3 drops an earlier turn's empty thinking block). The policy's tokens were kept; this
   * says it happened, after which turn, and shows the two renderings around the difference.
   */
  historyRewrites: z
    .array(
      z.object({
        afterTurn: z.number().int().nonnegative(),
        index: z.number().int().nonnegative(),
        before: z.string(),
        after: z.string(),
      }),
    )
    .optional(),
  /** The final answer the outcome reward judged, when one was extracted. */
  answer: z.string().optional(),
  rewards: z.object({
    outcome: z.number(),
    /** Sum of the process rewards of all calls, as they entered the return. */
    process: z.number(),
    total: z.number(),
    /** Each named reward function's value (`exact_match`, `format`, …). */
    components: z.record(z.string(), z.number()),
    /**
     * What each call's process reward was multiplied by to enter the return: the process weight,
     * divided (Agent-R1 normalisation) by the batch's largest absolute process reward-to-go.
     */
    processScale: z.number().optional(),
    /**
     * Rewards that did not return within `rewards.timeoutMs`: each counted as 0 (an outcome
     * reward) or as no opinion (a process reward), named here with why. Absent when none.
     */
    errors: z.array(z.object({ reward: z.string(), kind: z.literal('timeout'), message: z.string() })).optional(),
  }),
  /** The trajectory's advantage when it is one number (GRPO, RLOO, REINFORCE++ baseline). */
  advantage: z.number().optional(),
  /**
   * Set when the trajectory's group did not enter the update (dynamic sampling,
   * `algorithm.dynamicSampling`): `no_signal`, its group's rewards were all equal (zero
   * advantage); `surplus`, the step already had its `promptsPerStep` groups with signal. Such a
   * trajectory is recorded for the panels but is in neither the update nor its metrics. Absent
   * (every run before dynamic sampling): it was trained on.
   */
  dropped: z.enum(['no_signal', 'surplus']).optional(),
  /** Vision-language models: the images the trajectory saw, in the order of their tokens. */
  images: z.array(TrajectoryImageRecord).optional(),
  /**
   * An agent we did not write (the config's `agent`): the session this sequence belongs to, its
   * part (0, then 1… after the agent changed its history: `split` says where and why; the parts
   * share the session's reward), the agent's error when its session failed, and what it returned.
   */
  agent: z
    .object({
      session: z.string(),
      part: z.number().int().nonnegative(),
      split: z.string().optional(),
      error: z.string().optional(),
      answer: z.string().optional(),
      reward: z.number().optional(),
    })
    .optional(),
  lengths: z.object({
    prompt: z.number().int().nonnegative(),
    response: z.number().int().nonnegative(),
    total: z.number().int().nonnegative(),
  }),
  /**
   * Per-token data, aligned with `ids`: Int32 ids, each token's decoded text (`pieces`, for
   * the token view; a token that splits a UTF-8 character shows U+FFFD), Uint8 mask (1 =
   * generated by the policy), Float32 sampling log-probs (0 where masked), and optionally
   * per-token entropies and advantages.
   */
  tokens: z.object({
    ids: Base64Array,
    pieces: z.array(z.string()),
    mask: Base64Array,
    logprobs: Base64Array,
    entropies: Base64Array.optional(),
    advantages: Base64Array.optional(),
  }),
  /**
   * Live snapshots only (a debugger hold during the rollout), never in the run store: the
   * trajectory is still being rolled out, or waits for its batch to be scored. Until then its
   * `rewards` are zeros, its calls have no process reward and it has no advantage — show them
   * as pending, not as values. `ended`: it has reached its end (before that `finishReason` is
   * not final). Per-token arrays other than `mask` are left empty in snapshots.
   */
  inFlight: z.object({ ended: z.boolean() }).optional(),
});
export type TrajectoryRecord = z.infer<typeof TrajectoryRecord>;

export function stepFileName(step: number): string {
  return `step-${String(step).padStart(6, '0')}`;
}

/**
 * Where a run's trajectories live, relative to the run directory: a training step's rollouts,
 * or an evaluation's. An evaluation's records carry the step it followed as their `step`, the
 * row's position in the held-out data as `index` and `group`, and no advantage.
 */
export const TrajectorySet = z.enum(['train', 'eval']);
export type TrajectorySet = z.infer<typeof TrajectorySet>;

export function trajectoryFile(set: TrajectorySet, step: number): string {
  return `${set === 'train' ? 'rollouts' : 'evals'}/${stepFileName(step)}.jsonl`;
}

/** `checkpoints/step-NNNNNN/trainer_state.json`: what resuming needs beyond the weights. */
export const TrainerState = z.object({
  protocol: z.literal(PROTOCOL_VERSION),
  /** The RL step this checkpoint ends (0 after the warm start). */
  step: z.number().int().nonnegative(),
  /** AdamW's step count t. */
  optimizerSteps: z.number().int().nonnegative(),
  /** The trainer's random generator (update shuffling) where it stopped. */
  random: z.tuple([z.number().int(), z.number().int(), z.number().int(), z.number().int()]),
  /** Position in the training data: passes completed and rows consumed in the current pass. */
  data: z.object({ epoch: z.number().int().nonnegative(), position: z.number().int().nonnegative() }),
  /** What the weights in this folder are. */
  weights: z.enum(['full', 'lora']),
  /** Non-finite updates in a row when the checkpoint was taken. */
  consecutiveNonFinite: z.number().int().nonnegative(),
  /** Hash of the resolved config, to refuse resuming with a different one. */
  configHash: z.string(),
  /** `rewards.combine: 'agent-r1'`: the running statistic of the process-reward normalisation (rewards/processRewardScale.ts). */
  processNormalizer: z
    .object({ magnitude: z.number().nonnegative(), batches: z.number().int().nonnegative() })
    .optional(),
  /** The learning-rate multiplier of `onCollapse: 'rollback'` (halved by each rollback); absent: 1. */
  lrScale: z.number().positive().max(1).optional(),
  /** The size in bytes of every other file of the checkpoint when it was saved: a cut or missing file is found before it is used. */
  files: z.record(z.string(), z.number().int().nonnegative()).optional(),
});
export type TrainerState = z.infer<typeof TrainerState>;

export function checkpointDirName(step: number): string {
  return `checkpoints/${stepFileName(step)}`;
}
