import { describeRow, type DatasetRow } from '../../foundations/data/row';
import type { ToolErrorKind } from '../../contract/protocol/runStore';
import type { ToolCallResult, Trajectory } from '../rollout/trajectory';
import type { ToolCallOutcome } from '../../foundations/tools/context';
import { describeThrown, safeInstanceOf } from '../../foundations/tools/runner';
import type { ToolSet } from '../../foundations/tools/toolSet';
import { answerTag, type AnswerExtractor } from './answer';
import { RewardError, RewardTimeoutError } from './rewardErrors';
import { ProcessRewardNormalizer } from './processRewardScale';
import type { OutcomeReward, ProcessReward } from './types';

/**
 * Scores a batch of trajectories: outcome rewards per trajectory, process rewards per call, and
 * their combination.
 *
 * A call's process reward is the weighted sum of its components:
 *   - `tool:<name>`: the tool's own `reward` hook (successful calls only), times `toolRewards.weight`;
 *   - each user process reward, by its name, times its weight;
 *   - `error_penalty`: minus the configured penalty, for a call that failed (parse, unknown tool,
 *     invalid arguments, threw, timeout).
 * A call with no component has no process reward (recorded as undefined, counted as 0).
 *
 * Combination (`combine`), with w = `processWeight` (≥ 0, default 1):
 *   - `weighted-sum` (default): each call's reward enters the return as w · p.
 *   - `agent-r1`: as w · p / max(1, M), where M is a running average of the batches' largest
 *     absolute process reward-to-go (the statistic of Agent-R1's `prime_norm`; processRewardScale.ts):
 *     a trajectory's process return is brought to about w in magnitude, never amplified beyond
 *     w, and the factor does not jump from batch to batch.
 * `processScale` records the factor that was applied; each call keeps its raw reward and the
 * scaled one. How the scaled rewards become advantages, per estimator: trainer/pipeline/rl/ADVANTAGES.md.
 *
 * Deadlines: each reward call (an outcome reward on a trajectory, a process reward or a tool's
 * hook on a call) has `timeoutMs` (default 60 s). One that has not returned by then counts as 0
 * (an outcome) or as no opinion (a process reward), the trajectory's `errors` say which and why,
 * and the batch goes on. Only a reward that yields can be outrun here: a synchronous loop on this
 * thread never lets the timer fire, which is why a config file's rewards run in a reward worker
 * (bridges/usercode/rewardHost.ts) that a stuck call's deadline terminates.
 *
 * Validation (checkRewardConfig): every weight is a finite number ≥ 0 (a weight scales a
 * reward; a penalty is a reward whose score is negative), and `errorPenalty` is a finite number
 * ≥ 0 per error kind — it is subtracted, so a negative one would be a bonus for failing.
 */

export type CombineMode = 'weighted-sum' | 'agent-r1';

export interface RewardConfig<Row extends object = DatasetRow> {
  outcome: readonly OutcomeReward<Row>[];
  process?: readonly ProcessReward<Row>[];
  /** The tools' own `reward` hooks: on (weight 1) unless false. */
  toolRewards?: boolean | { weight: number };
  /** Subtracted from a failed call's process reward: one number for every kind, or per kind. */
  errorPenalty?: number | Partial<Record<ToolErrorKind, number>>;
  /**
   * Subtracted from the outcome of a trajectory that a length limit cut off (finish reason
   * `max_turn_tokens` or `max_total_tokens`): an answer the policy never finished, or one it ran
   * on past (`<answer>42</answer>42</answer>…` until the turn's limit) — DAPO's overlong
   * punishment, in its simplest form. Recorded as the outcome component `truncation_penalty`.
   */
  truncationPenalty?: number;
  combine?: CombineMode;
  /** Multiplies process rewards in either mode (default 1; 0 turns every process reward off, the error penalty included). */
  processWeight?: number;
  /** `agent-r1`: the running average's momentum μ in [0, 1) (default 0.9; 0 is the batch's own statistic, clamped). */
  processNormMomentum?: number;
  /** Extracts the answer recorded on the trajectory (default: the last `<answer>…</answer>`). */
  answer?: AnswerExtractor;
  /** How long one reward call may take, in ms (default 60 000): past it the reward is recorded as timed out and the batch goes on. */
  timeoutMs?: number;
  /**
   * Where a config file's rewards run: `'worker'` (default), in a reward worker that evaluates the
   * same module, where a call that never returns is stopped at its deadline; `'trainer'`, on the
   * trainer's thread, for rewards that share live state with tools kept there — a synchronous
   * loop in one then hangs the run, and no signal can stop it cleanly.
   */
  isolation?: 'worker' | 'trainer';
}

/** A reward call's deadline unless `rewards.timeoutMs` says otherwise: room for a judge that asks a model over the network. */
export const DEFAULT_REWARD_TIMEOUT_MS = 60_000;

/** A reward that did not return in time, as its trajectory records it. */
export interface RewardFailure {
  /** The reward's name (`tool:<name>` for a tool's hook). */
  reward: string;
  kind: 'timeout';
  message: string;
}

/**
 * The "process rewards off" ablation: the same config with every process part out of the return —
 * the tools' own rewards, the user's process rewards *and* the error penalty (processWeight 0).
 * The components are still computed and recorded on each call, so the ablation's trajectories
 * show what the process rewards would have said; none of it reaches an advantage.
 */
export function withoutProcessRewards<Row extends object>(config: RewardConfig<Row>): RewardConfig<Row> {
  return { ...config, processWeight: 0 };
}

export interface CallReward {
  /** Each component, unweighted. */
  components: Record<string, number>;
  /** Weighted sum of the components, before combination; undefined when there were none. */
  processReward?: number;
  /** What enters the return: processReward · processScale (0 when undefined). */
  scaled: number;
}

export interface TrajectoryRewards {
  /** Weighted sum of the outcome rewards. */
  outcome: number;
  /** Σ of the calls' scaled process rewards. */
  process: number;
  total: number;
  /** Outcome rewards by name, and `process/<name>` sums over calls, all unweighted. */
  components: Record<string, number>;
  processScale: number;
  answer?: string;
  /** Aligned with `trajectory.calls`. */
  calls: CallReward[];
  /** Rewards that timed out on this trajectory or its calls (absent when none did). */
  errors?: RewardFailure[];
}

export interface BatchRewards {
  trajectories: TrajectoryRewards[];
  combine: CombineMode;
  processScale: number;
  /** agent-r1: the batch's largest absolute process reward-to-go (0 when there were none). */
  maxProcessRewardToGo: number;
  /** agent-r1: the running magnitude M the scale divided by (max(1, M)), after this batch. */
  processMagnitude?: number;
}

export interface ScoreOptions {
  /**
   * agent-r1: the run's running statistic, updated by this batch (training). Without one, a fresh
   * one: the batch is normalised by its own statistic, clamped so that nothing is amplified
   * (evaluation, a served reward).
   */
  normalizer?: ProcessRewardNormalizer;
  /** Aborted when the run stops: scoring ends at once (rejecting with the signal's reason), whatever a reward is doing. */
  signal?: AbortSignal;
}

/**
 * The largest reward magnitude accepted. Rewards far beyond any task's scale break the arithmetic
 * after them without an error: squared in a group's standard deviation they overflow, and
 * ±1e300 made every advantage 0 — a run that trains on nothing while looking healthy. So a
 * reward that is not a finite number within ±MAX_ABS_REWARD (each reward a function returns,
 * each weighted sum, each trajectory's total) fails the run, naming the reward, the trajectory
 * and its dataset row, and the value. Scale such rewards down.
 */
export const MAX_ABS_REWARD = 1e6;

function finite(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new RewardError(
      `${what} returned ${typeof value === 'number' ? value : describeValue(value)}; rewards must be finite numbers`,
    );
  }
  if (Math.abs(value) > MAX_ABS_REWARD) {
    throw new RewardError(
      `${what} returned ${value}; rewards must lie within ±${MAX_ABS_REWARD.toExponential()} (larger ones overflow the advantage arithmetic): scale it down`,
    );
  }
  return value;
}

function describeValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'bigint') return `${value}n (a BigInt)`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

/** What one trajectory's scoring shares: each call's deadline, the run's stop, and the timeouts so far. */
interface Scoring {
  timeoutMs: number;
  signal: AbortSignal | undefined;
  errors: RewardFailure[];
}

/** What `evaluate` returns for a reward that ran out of time (recorded in `scoring.errors`). */
const TIMED_OUT = Symbol('timed out');

/**
 * Calls a reward. A value returned synchronously is taken as it is (the fast path: no timer); a
 * promise races the deadline and the run's stop. A timeout is recorded and answered TIMED_OUT; a
 * stop rejects with the signal's reason; anything the reward throws becomes a RewardError.
 */
async function evaluate<T>(
  what: string,
  reward: string,
  run: () => T | Promise<T>,
  scoring: Scoring,
): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const value = run();
    if (typeof (value as { then?: unknown } | null | undefined)?.then !== 'function') return value as T;
    const deadline = new Promise<never>((_resolve, reject) => {
      const message = `${what} did not return within ${scoring.timeoutMs} ms (rewards.timeoutMs)`;
      timer = setTimeout(() => reject(new RewardTimeoutError(message)), scoring.timeoutMs);
      onAbort = () => reject(scoring.signal!.reason);
      if (scoring.signal?.aborted) onAbort();
      else scoring.signal?.addEventListener('abort', onAbort, { once: true });
    });
    return await Promise.race([value, deadline]);
  } catch (error) {
    if (scoring.signal?.aborted) throw scoring.signal.reason;
    if (safeInstanceOf(error, RewardTimeoutError)) {
      scoring.errors.push({ reward, kind: 'timeout', message: (error as Error).message });
      return TIMED_OUT;
    }
    if (safeInstanceOf(error, RewardError)) throw error;
    throw new RewardError(`${what} threw: ${describeThrown(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
    if (onAbort) scoring.signal?.removeEventListener('abort', onAbort);
  }
}

const ERROR_KINDS: readonly ToolErrorKind[] = [
  'parse',
  'unknown_tool',
  'invalid_arguments',
  'threw',
  'timeout',
  'unrecorded',
];

/** A weight or penalty: a finite number ≥ 0, or an error naming the field. */
function nonNegative(value: unknown, field: string, why: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw new RewardError(`${field}: expected a finite number ≥ 0 (${why}), got ${describeValue(value)}`);
}

/** Checks names, weights and penalties once, so a typo or a wrong sign fails before any rollout rather than after. */
export function checkRewardConfig<Row extends object>(config: RewardConfig<Row>): void {
  const names = new Set<string>();
  const check = (reward: { name?: unknown; weight?: unknown; score?: unknown }, where: string) => {
    if (typeof reward?.name !== 'string' || reward.name === '')
      throw new RewardError(`${where}: a reward needs a non-empty name`);
    if (typeof reward.score !== 'function')
      throw new RewardError(`${where} ("${reward.name}"): score must be a function`);
    if (reward.weight !== undefined)
      nonNegative(
        reward.weight,
        `${where} ("${reward.name}").weight`,
        'a weight scales the score; make the score negative for a penalty',
      );
    if (names.has(reward.name)) throw new RewardError(`${where}: two rewards are named "${reward.name}"`);
    names.add(reward.name);
  };
  if (!Array.isArray(config.outcome)) throw new RewardError('rewards.outcome must be a list of outcome rewards');
  config.outcome.forEach((r, i) => check(r, `rewards.outcome[${i}]`));
  (config.process ?? []).forEach((r, i) => check(r, `rewards.process[${i}]`));
  const tool = config.toolRewards;
  if (tool !== undefined && typeof tool !== 'boolean') {
    if (typeof tool !== 'object' || tool === null)
      throw new RewardError(`rewards.toolRewards: expected true, false or { weight }, got ${describeValue(tool)}`);
    nonNegative(tool.weight, 'rewards.toolRewards.weight', "a weight scales the tools' own rewards");
  }
  checkErrorPenalty(config.errorPenalty);
  if (config.truncationPenalty !== undefined)
    nonNegative(
      config.truncationPenalty,
      'rewards.truncationPenalty',
      "it is subtracted from a cut-off trajectory's outcome: a negative one would reward running on",
    );
  if (config.combine !== undefined && config.combine !== 'weighted-sum' && config.combine !== 'agent-r1') {
    throw new RewardError(
      `rewards.combine must be "weighted-sum" or "agent-r1", got ${JSON.stringify(config.combine)}`,
    );
  }
  if (
    config.timeoutMs !== undefined &&
    (typeof config.timeoutMs !== 'number' || !Number.isFinite(config.timeoutMs) || config.timeoutMs <= 0)
  )
    throw new RewardError(
      `rewards.timeoutMs: expected a number of milliseconds > 0 (how long one reward call may take), got ${describeValue(config.timeoutMs)}`,
    );
  if (config.isolation !== undefined && config.isolation !== 'worker' && config.isolation !== 'trainer')
    throw new RewardError(`rewards.isolation must be "worker" or "trainer", got ${describeValue(config.isolation)}`);
  if (config.processWeight !== undefined)
    nonNegative(config.processWeight, 'rewards.processWeight', 'it multiplies every process reward; 0 turns them off');
  const momentum = config.processNormMomentum;
  if (momentum !== undefined && (typeof momentum !== 'number' || !(momentum >= 0 && momentum < 1))) {
    throw new RewardError(
      `rewards.processNormMomentum: expected a number in [0, 1) (the running average's momentum), got ${describeValue(momentum)}`,
    );
  }
}

/** One penalty for every kind of failed call, or one per kind; each is subtracted, so each must be ≥ 0. */
function checkErrorPenalty(penalty: unknown): void {
  const why = "it is subtracted from a failed call's reward: a negative penalty would reward failing";
  if (penalty === undefined) return;
  if (typeof penalty === 'number') return nonNegative(penalty, 'rewards.errorPenalty', why);
  if (typeof penalty !== 'object' || penalty === null || Array.isArray(penalty)) {
    throw new RewardError(
      `rewards.errorPenalty: expected a finite number ≥ 0 or a map of error kind (${ERROR_KINDS.join(', ')}) to one, got ${describeValue(penalty)}`,
    );
  }
  for (const [kind, value] of Object.entries(penalty)) {
    if (!ERROR_KINDS.includes(kind as ToolErrorKind))
      throw new RewardError(
        `rewards.errorPenalty.${kind}: not an error kind; expected one of ${ERROR_KINDS.join(', ')}`,
      );
    nonNegative(value, `rewards.errorPenalty.${kind}`, why);
  }
}

function penaltyFor(config: RewardConfig<object>, kind: ToolErrorKind): number | undefined {
  const penalty = config.errorPenalty;
  if (penalty === undefined) return undefined;
  return typeof penalty === 'number' ? penalty : penalty[kind];
}

async function rewardCall<Row extends object>(
  trajectory: Trajectory<Row>,
  call: ToolCallResult,
  config: RewardConfig<Row>,
  tools: ToolSet,
  scoring: Scoring,
): Promise<Omit<CallReward, 'scaled'>> {
  const components: Record<string, number> = {};
  let sum = 0;
  let any = false;
  const where = `trajectory ${trajectory.index} (${describeRow(trajectory.row as unknown as DatasetRow)}), turn ${call.turn} call ${call.index}`;
  const add = (name: string, value: number, weight: number) => {
    components[name] = value;
    sum += weight * value;
    any = true;
  };
  const toolWeight =
    config.toolRewards === false ? 0 : typeof config.toolRewards === 'object' ? config.toolRewards.weight : 1;
  const tool = call.name !== undefined ? tools.get(call.name) : undefined;
  if (toolWeight !== 0 && tool?.reward && !call.error && call.result) {
    const what = `the reward hook of tool "${tool.name}" on ${where}`;
    const value = await evaluate(
      what,
      `tool:${tool.name}`,
      () => tool.reward!(call as unknown as ToolCallOutcome<never>, { row: trajectory.row as never, trajectory }),
      scoring,
    );
    if (value !== TIMED_OUT) add(`tool:${tool.name}`, finite(value, what), toolWeight);
  }
  for (const reward of config.process ?? []) {
    const what = `process reward "${reward.name}" on ${where}`;
    const value = await evaluate(
      what,
      reward.name,
      () => reward.score(call, { row: trajectory.row, trajectory }),
      scoring,
    );
    if (value !== undefined && value !== TIMED_OUT) add(reward.name, finite(value, what), reward.weight ?? 1);
  }
  if (call.error) {
    const penalty = penaltyFor(config as RewardConfig<object>, call.error.kind);
    if (penalty !== undefined) add('error_penalty', -penalty, 1);
  }
  return any ? { components, processReward: sum } : { components };
}

/** The largest |Σ_{k ≥ j} r_k| over the calls j of one trajectory (calls are in token order). */
function maxAbsRewardToGo(rewards: readonly (number | undefined)[]): number {
  let acc = 0;
  let max = 0;
  for (let j = rewards.length - 1; j >= 0; j--) {
    acc += rewards[j] ?? 0;
    max = Math.max(max, Math.abs(acc));
  }
  return max;
}

export async function scoreTrajectories<Row extends object>(
  trajectories: readonly Trajectory<Row>[],
  config: RewardConfig<Row>,
  tools: ToolSet,
  options: ScoreOptions = {},
): Promise<BatchRewards> {
  checkRewardConfig(config);
  const combine = config.combine ?? 'weighted-sum';
  const processWeight = config.processWeight ?? 1;
  const extract = config.answer ?? answerTag;
  const signal = options.signal;

  const partial = await Promise.all(
    trajectories.map(async (trajectory) => {
      const components: Record<string, number> = {};
      const scoring: Scoring = { timeoutMs: config.timeoutMs ?? DEFAULT_REWARD_TIMEOUT_MS, signal, errors: [] };
      let outcome = 0;
      for (const reward of config.outcome) {
        const what = `outcome reward "${reward.name}" on trajectory ${trajectory.index} (${describeRow(trajectory.row as unknown as DatasetRow)})`;
        const returned = await evaluate(what, reward.name, () => reward.score(trajectory, trajectory.row), scoring);
        const value = returned === TIMED_OUT ? 0 : finite(returned, what);
        components[reward.name] = value;
        outcome += (reward.weight ?? 1) * value;
      }
      if (
        config.truncationPenalty &&
        (trajectory.finishReason === 'max_turn_tokens' || trajectory.finishReason === 'max_total_tokens')
      ) {
        components.truncation_penalty = -config.truncationPenalty;
        outcome -= config.truncationPenalty;
      }
      const calls: Omit<CallReward, 'scaled'>[] = [];
      for (const call of trajectory.calls) calls.push(await rewardCall(trajectory, call, config, tools, scoring));
      for (const call of calls) {
        for (const [name, value] of Object.entries(call.components))
          components[`process/${name}`] = (components[`process/${name}`] ?? 0) + value;
      }
      const where = `trajectory ${trajectory.index} (${describeRow(trajectory.row as unknown as DatasetRow)})`;
      const errors = scoring.errors;
      return { outcome, components, calls, answer: extract(trajectory as Trajectory<object>), where, errors };
    }),
  );

  shareSessionOutcomes(trajectories, partial);

  let maxProcessRewardToGo = 0;
  let processScale = processWeight;
  let processMagnitude: number | undefined;
  if (combine === 'agent-r1') {
    for (const t of partial)
      maxProcessRewardToGo = Math.max(maxProcessRewardToGo, maxAbsRewardToGo(t.calls.map((c) => c.processReward)));
    const normalizer = options.normalizer ?? new ProcessRewardNormalizer(config.processNormMomentum);
    processScale = processWeight / normalizer.observe(maxProcessRewardToGo);
    processMagnitude = normalizer.runningMagnitude;
  }

  return {
    combine,
    processScale,
    maxProcessRewardToGo,
    ...(processMagnitude !== undefined ? { processMagnitude } : {}),
    trajectories: partial.map((t) => {
      const calls = t.calls.map((c) => ({ ...c, scaled: (c.processReward ?? 0) * processScale }));
      const process = calls.reduce((a, c) => a + c.scaled, 0);
      // Weights can take sums of rewards that are each in range out of it.
      finite(t.outcome + process, `the total reward (outcome ${t.outcome}, process ${process}) of ${t.where}`);
      return {
        outcome: t.outcome,
        process,
        total: t.outcome + process,
        components: t.components,
        processScale,
        ...(t.answer !== undefined ? { answer: t.answer } : {}),
        calls,
        ...(t.errors.length ? { errors: t.errors } : {}),
      };
    }),
  };
}

/**
 * An agent session that changed its history is several sequences (rollout/gateway): they are one
 * rollout, so every part takes the outcome of the session's last part — where its answer is — and
 * keeps its own calls' process rewards.
 */
function shareSessionOutcomes(
  trajectories: readonly Trajectory<object>[],
  partial: { outcome: number; components: Record<string, number>; answer?: string | undefined }[],
): void {
  const last = new Map<string, number>();
  trajectories.forEach((t, i) => {
    const session = t.agent?.session;
    if (session === undefined) return;
    const k = last.get(session);
    if (k === undefined || trajectories[k].agent!.part < t.agent!.part) last.set(session, i);
  });
  trajectories.forEach((t, i) => {
    const k = t.agent ? last.get(t.agent.session) : undefined;
    if (k === undefined || k === i) return;
    const own = partial[i].components;
    const outcomeNames = Object.keys(partial[k].components).filter((name) => !name.startsWith('process/'));
    for (const name of outcomeNames) own[name] = partial[k].components[name];
    partial[i].outcome = partial[k].outcome;
    partial[i].answer = partial[k].answer;
  });
}
