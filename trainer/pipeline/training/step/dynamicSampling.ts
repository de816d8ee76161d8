import type { BatchRewards, TrajectoryRewards } from '../../rewards/score';
import type { RlSample } from '../../rl/samples';
import type { Trajectory } from '../../rollout/trajectory';
import type { TrajectoryRecord } from '../../../contract/protocol/runStore';

/**
 * Dynamic sampling (DAPO, Yu et al. 2025, §3.2; verl's recipe/dapo `filter_groups`): a step rolls
 * out its `promptsPerStep` prompts; a group whose rewards are all equal carries no signal for a
 * group-baseline estimator (rl/groupSignal.ts), so it is dropped, and fresh prompts — the next
 * rows of the data cursor, in its order — are rolled out in another round, until the step has
 * `promptsPerStep` groups with signal or has run `maxRounds` rounds. What the step then trains on:
 *
 * - the first `promptsPerStep` groups with signal, in rollout order (later ones are `surplus`:
 *   verl likewise trims the batch to its size, so every update has the configured size);
 * - fewer, when the bound came first: only the groups with signal. The dropped groups would add
 *   no policy gradient, only dilute it (the loss averages over their tokens too);
 * - when no group had signal: the first round's groups, as the run would without dynamic
 *   sampling. Their policy gradient is zero, so only the regularisers act (a KL loss, an entropy
 *   bonus), and the step keeps its optimizer steps, schedule and checkpoint like any other.
 *
 * A round after the first rolls out as many prompts as the share with signal so far predicts
 * will fill the step (missing ÷ share), at most `promptsPerStep`: DAPO over-generates (3× the
 * prompts per generation batch) for the same reason, on a CPU the bound keeps a round no longer
 * than the first. Everything here follows from the rewards, which follow from the seeds: a
 * resumed run takes the same rows and rounds.
 */

export type DropReason = NonNullable<TrajectoryRecord['dropped']>;

/** A group of one round: its number within the step (rollout order) and whether its rewards differ. */
export interface SampledGroup {
  group: number;
  signal: boolean;
}

export class GroupSelection {
  private readonly rounds: SampledGroup[][] = [];

  private readonly maxRounds: number;

  /** Dynamic sampling off: one round, every group trained on. */
  constructor(
    private readonly target: number,
    private readonly settings: { enabled: boolean; maxRounds: number },
  ) {
    if (!Number.isInteger(target) || target < 1)
      throw new RangeError(`prompts per step must be a positive integer, got ${target}`);
    if (!Number.isInteger(settings.maxRounds) || settings.maxRounds < 1)
      throw new RangeError(`dynamic sampling's maxRounds must be a positive integer, got ${settings.maxRounds}`);
    this.maxRounds = settings.enabled ? settings.maxRounds : 1;
  }

  add(round: readonly SampledGroup[]): void {
    if (this.rounds.length >= this.maxRounds) throw new Error(`a step has at most ${this.maxRounds} rollout round(s)`);
    this.rounds.push([...round]);
  }

  get roundCount(): number {
    return this.rounds.length;
  }

  /** Groups rolled out so far, every round included. */
  get groupCount(): number {
    return this.rounds.reduce((n, r) => n + r.length, 0);
  }

  private get withSignal(): number {
    return this.rounds.reduce((n, r) => n + r.filter((g) => g.signal).length, 0);
  }

  /** Prompts the next round rolls out: 0 when the step has its groups with signal, or has run its rounds. */
  nextPrompts(): number {
    if (this.rounds.length === 0) return this.target;
    const missing = this.target - this.withSignal;
    if (missing <= 0 || this.rounds.length >= this.maxRounds) return 0;
    if (this.withSignal === 0) return this.target;
    return Math.min(this.target, Math.ceil((missing * this.groupCount) / this.withSignal));
  }

  /** Why each group that is not trained on was dropped (see the module comment); trained groups are absent. */
  dropped(): Map<number, DropReason> {
    const all = this.rounds.flat();
    const out = new Map<number, DropReason>();
    if (!this.settings.enabled) return out;
    if (this.withSignal === 0) {
      for (const g of this.rounds.slice(1).flat()) out.set(g.group, 'no_signal');
      return out;
    }
    let kept = 0;
    for (const g of all) {
      if (!g.signal) out.set(g.group, 'no_signal');
      else if (kept < this.target) kept++;
      else out.set(g.group, 'surplus');
    }
    return out;
  }
}

/** One rollout round, scored. */
export interface ScoredRound {
  trajectories: Trajectory[];
  rewards: BatchRewards;
  samples: RlSample[];
  rolloutSeconds: number;
  rewardSeconds: number;
  generatedTokens: number;
}

/** A step's rollouts, every round, and which of them the update trains on. */
export interface SampledStep {
  /** Every trajectory of the step in rollout order, its rewards, and why it was dropped (undefined: trained on). */
  rollouts: { trajectories: Trajectory[]; rewards: TrajectoryRewards[]; dropped: (DropReason | undefined)[] };
  /** What the update trains on: the trajectories of the trained groups and their samples, in rollout order. */
  trained: { trajectories: Trajectory[]; samples: RlSample[] };
  /**
   * The first round, every group of it: the rollout metrics (reward, score, tools, entropy) describe
   * it — the policy's samples on `promptsPerStep` prompts as the cursor gave them, comparable
   * with a run without dynamic sampling, not a selection made by the rewards.
   */
  firstRound: { trajectories: Trajectory[]; rewards: BatchRewards };
  rounds: number;
  groups: number;
  droppedGroups: number;
  rolloutSeconds: number;
  rewardSeconds: number;
  generatedTokens: number;
}

export function sampledStep(rounds: readonly ScoredRound[], dropped: ReadonlyMap<number, DropReason>): SampledStep {
  const trajectories = rounds.flatMap((r) => r.trajectories);
  const samples = rounds.flatMap((r) => r.samples);
  const reasons = trajectories.map((t) => dropped.get(t.group));
  const keep = (_: unknown, i: number) => reasons[i] === undefined;
  const sum = (pick: (r: ScoredRound) => number) => rounds.reduce((a, r) => a + pick(r), 0);
  return {
    rollouts: { trajectories, rewards: rounds.flatMap((r) => r.rewards.trajectories), dropped: reasons },
    trained: { trajectories: trajectories.filter(keep), samples: samples.filter(keep) },
    firstRound: { trajectories: rounds[0].trajectories, rewards: rounds[0].rewards },
    rounds: rounds.length,
    groups: new Set(trajectories.map((t) => t.group)).size,
    droppedGroups: dropped.size,
    rolloutSeconds: sum((r) => r.rolloutSeconds),
    rewardSeconds: sum((r) => r.rewardSeconds),
    generatedTokens: sum((r) => r.generatedTokens),
  };
}
