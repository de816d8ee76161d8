import { describeRow, type DatasetRow } from '../data/row';
import type { ToolErrorKind } from '../shared/protocol/runStore';
import type { ToolCallResult, Trajectory } from '../rollout/trajectory';
import type { ToolCallOutcome } from '../tools/context';
import { describeThrown, safeInstanceOf } from '../tools/runner';
import type { ToolSet } from '../tools/toolSet';
import { answerTag, type AnswerExtractor } from './answer';
import { RewardError } from './rewardErrors';
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
 * Combination (`combine`):
 *   - `weighted-sum` (default): total = outcome + processWeight · Σ call rewards.
 *   - `agent-r1`: process rewards are first divided by the batch's largest absolute
 *     reward-to-go of the process rewards, max over trajectories and positions t of
 *     |Σ_{calls at or after t} r_call| (PRIME's and Agent-R1's normalisation), so that no
 *     trajectory's process return exceeds 1 in magnitude and the outcome reward keeps its
 *     weight however many calls a trajectory makes. Then weighted by processWeight. A batch
 *     without process rewards is left as it is.
 * `processScale` records the factor that was applied; each call keeps its raw reward and the
 * scaled one.
 */

export type CombineMode = 'weighted-sum' | 'agent-r1';

export interface RewardConfig<Row extends object = DatasetRow> {
  outcome: readonly OutcomeReward<Row>[];
  process?: readonly ProcessReward<Row>[];
  /** The tools' own `reward` hooks: on (weight 1) unless false. */
  toolRewards?: boolean | { weight: number };
  /** Subtracted from a failed call's process reward: one number for every kind, or per kind. */
  errorPenalty?: number | Partial<Record<ToolErrorKind, number>>;
  combine?: CombineMode;
  /** Multiplies process rewards in either mode (default 1). */
  processWeight?: number;
  /** Extracts the answer recorded on the trajectory (default: the last `<answer>…</answer>`). */
  answer?: AnswerExtractor;
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
}

export interface BatchRewards {
  trajectories: TrajectoryRewards[];
  combine: CombineMode;
  processScale: number;
  /** agent-r1: the batch's largest absolute process reward-to-go (0 when there were none). */
  maxProcessRewardToGo: number;
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
    throw new RewardError(`${what} returned ${typeof value === 'number' ? value : describeValue(value)}; rewards must be finite numbers`);
  }
  if (Math.abs(value) > MAX_ABS_REWARD) {
    throw new RewardError(`${what} returned ${value}; rewards must lie within ±${MAX_ABS_REWARD.toExponential()} (larger ones overflow the advantage arithmetic): scale it down`);
  }
  return value;
}

function describeValue(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n (a BigInt)`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

async function evaluate<T>(what: string, run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (safeInstanceOf(error, RewardError)) throw error;
    throw new RewardError(`${what} threw: ${describeThrown(error)}`, { cause: error });
  }
}

/** Checks names and weights once, so a typo fails before any rollout rather than after. */
export function checkRewardConfig<Row extends object>(config: RewardConfig<Row>): void {
  const names = new Set<string>();
  const check = (reward: { name?: unknown; weight?: unknown; score?: unknown }, where: string) => {
    if (typeof reward?.name !== 'string' || reward.name === '') throw new RewardError(`${where}: a reward needs a non-empty name`);
    if (typeof reward.score !== 'function') throw new RewardError(`${where} ("${reward.name}"): score must be a function`);
    if (reward.weight !== undefined && (typeof reward.weight !== 'number' || !Number.isFinite(reward.weight))) {
      throw new RewardError(`${where} ("${reward.name}"): weight must be a finite number`);
    }
    if (names.has(reward.name)) throw new RewardError(`${where}: two rewards are named "${reward.name}"`);
    names.add(reward.name);
  };
  if (!Array.isArray(config.outcome)) throw new RewardError('rewards.outcome must be a list of outcome rewards');
  config.outcome.forEach((r, i) => check(r, `rewards.outcome[${i}]`));
  (config.process ?? []).forEach((r, i) => check(r, `rewards.process[${i}]`));
  const penalty = config.errorPenalty;
  const penalties = typeof penalty === 'number' ? [penalty] : Object.values(penalty ?? {});
  if (penalties.some((p) => typeof p !== 'number' || !Number.isFinite(p))) throw new RewardError('rewards.errorPenalty must be a finite number or a map of error kind to finite number');
  if (config.combine !== undefined && config.combine !== 'weighted-sum' && config.combine !== 'agent-r1') {
    throw new RewardError(`rewards.combine must be "weighted-sum" or "agent-r1", got ${JSON.stringify(config.combine)}`);
  }
  if (config.processWeight !== undefined && !Number.isFinite(config.processWeight)) throw new RewardError('rewards.processWeight must be a finite number');
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
  const toolWeight = config.toolRewards === false ? 0 : typeof config.toolRewards === 'object' ? config.toolRewards.weight : 1;
  const tool = call.name !== undefined ? tools.get(call.name) : undefined;
  if (toolWeight !== 0 && tool?.reward && !call.error && call.result) {
    const what = `the reward hook of tool "${tool.name}" on ${where}`;
    const value = await evaluate(what, () => tool.reward!(call as unknown as ToolCallOutcome<never>, { row: trajectory.row as never, trajectory }));
    add(`tool:${tool.name}`, finite(value, what), toolWeight);
  }
  for (const reward of config.process ?? []) {
    const what = `process reward "${reward.name}" on ${where}`;
    const value = await evaluate(what, () => reward.score(call, { row: trajectory.row, trajectory }));
    if (value !== undefined) add(reward.name, finite(value, what), reward.weight ?? 1);
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
): Promise<BatchRewards> {
  checkRewardConfig(config);
  const combine = config.combine ?? 'weighted-sum';
  const processWeight = config.processWeight ?? 1;
  const extract = config.answer ?? answerTag;

  const partial = await Promise.all(
    trajectories.map(async (trajectory) => {
      const components: Record<string, number> = {};
      let outcome = 0;
      for (const reward of config.outcome) {
        const what = `outcome reward "${reward.name}" on trajectory ${trajectory.index} (${describeRow(trajectory.row as unknown as DatasetRow)})`;
        const value = finite(await evaluate(what, () => reward.score(trajectory, trajectory.row)), what);
        components[reward.name] = value;
        outcome += (reward.weight ?? 1) * value;
      }
      const calls: Omit<CallReward, 'scaled'>[] = [];
      for (const call of trajectory.calls) calls.push(await rewardCall(trajectory, call, config, tools));
      for (const call of calls) {
        for (const [name, value] of Object.entries(call.components)) components[`process/${name}`] = (components[`process/${name}`] ?? 0) + value;
      }
      const where = `trajectory ${trajectory.index} (${describeRow(trajectory.row as unknown as DatasetRow)})`;
      return { outcome, components, calls, answer: extract(trajectory as Trajectory<object>), where };
    }),
  );

  let maxProcessRewardToGo = 0;
  if (combine === 'agent-r1') {
    for (const t of partial) maxProcessRewardToGo = Math.max(maxProcessRewardToGo, maxAbsRewardToGo(t.calls.map((c) => c.processReward)));
  }
  const processScale = combine === 'agent-r1' && maxProcessRewardToGo > 0 ? processWeight / maxProcessRewardToGo : processWeight;

  return {
    combine,
    processScale,
    maxProcessRewardToGo,
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
      };
    }),
  };
}
