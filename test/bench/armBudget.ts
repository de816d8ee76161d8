import { Random } from '../../trainer/foundations/models/random';
import type { ScheduleConfig } from '../../trainer/pipeline/training/step/schedule';

/**
 * Equal budgets for the benchmark's arms (rlArms.ts): every arm makes the same optimizer steps over
 * the same number of sequences under the same learning-rate schedule, whether it learns from its
 * own rollouts (RFT, GRPO) or from demonstrations (SFT). Pure: the unit tests check it.
 */

/** The RL side's shape: what the example's config makes per RL step. */
export interface RlShape {
  steps: number;
  promptsPerStep: number;
  groupSize: number;
  epochs: number;
  miniBatches: number;
}

export interface ArmBudget {
  /** Optimizer steps every arm makes. */
  optimizerSteps: number;
  /** Sequences per optimizer step (an SFT arm's batch size). */
  batchSize: number;
  /** Trajectories an RL arm samples; demonstration rows an SFT arm trains on is this × epochs (its passes). */
  trajectories: number;
  sequencePasses: number;
  /** The RL arms' schedule (over RL steps, as the trainer schedules it) and the SFT arms' (over optimizer steps). */
  rl: ScheduleConfig;
  sft: ScheduleConfig;
}

/**
 * The budget of an arm: `shape.steps` RL steps of `promptsPerStep × groupSize` trajectories,
 * each trained `epochs` times in `miniBatches` optimizer steps — or as many optimizer steps of as
 * many demonstrations. The schedule: warm-up over the first quarter of the RL steps (at least one),
 * then cosine to a tenth of the peak — the shape of the warm start's SFT schedule, which SFT arms
 * always get (configOptions.sftSchedule: cosine to 0.1), counted in optimizer steps for SFT and in
 * RL steps (each `epochs × miniBatches` optimizer steps) for RL, so the two agree at every RL step.
 */
export function armBudget(shape: RlShape, peakLr: number): ArmBudget {
  for (const [name, v] of Object.entries(shape))
    if (!Number.isInteger(v) || v < 1) throw new Error(`armBudget: ${name} must be a whole number ≥ 1, got ${v}`);
  const trajectories = shape.steps * shape.promptsPerStep * shape.groupSize;
  const perRlStep = shape.epochs * shape.miniBatches;
  const warmupRlSteps = Math.max(1, Math.round(shape.steps / 4));
  return {
    optimizerSteps: shape.steps * perRlStep,
    batchSize: Math.ceil((shape.promptsPerStep * shape.groupSize) / shape.miniBatches),
    trajectories,
    sequencePasses: trajectories * shape.epochs,
    rl: { lr: peakLr, warmupSteps: warmupRlSteps, schedule: 'cosine', minLrRatio: 0.1 },
    sft: { lr: peakLr, warmupSteps: warmupRlSteps * perRlStep, schedule: 'cosine', minLrRatio: 0.1 },
  };
}

/**
 * `count` rows drawn from `rows` in passes: each pass a fresh seeded permutation, the last one cut
 * short — so every row appears ⌊count / n⌋ or ⌈count / n⌉ times, as in whole epochs.
 */
export function demonstrationPasses<T>(rows: readonly T[], count: number, seed: number): T[] {
  if (rows.length === 0) throw new Error('demonstrationPasses: no rows');
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`demonstrationPasses: count must be a whole number ≥ 0, got ${count}`);
  const random = Random.fromSeed(seed);
  const out: T[] = [];
  while (out.length < count) out.push(...random.shuffle([...rows]).slice(0, count - out.length));
  return out;
}

/** One evaluated trajectory as the benchmark reads it from a run's evaluation records. */
export interface ScoredQuestion {
  rowId: string;
  score: number;
  calls: number;
}

/**
 * Scores as the bootstrap's grid: for each seed's run (in seed order), the score of each question
 * of `questionIds` (in that order). A question missing from a run is an error naming both.
 */
export function scoreGrid(
  runs: ReadonlyArray<{ label: string; questions: readonly ScoredQuestion[] }>,
  questionIds: readonly string[],
): { scores: number[][]; callsPerTrajectory: number } {
  let calls = 0;
  const scores = runs.map((run) => {
    const byId = new Map(run.questions.map((q) => [q.rowId, q]));
    return questionIds.map((id) => {
      const q = byId.get(id);
      if (!q) throw new Error(`${run.label}: no evaluation of question ${id}`);
      calls += q.calls;
      return q.score;
    });
  });
  return { scores, callsPerTrajectory: calls / Math.max(1, runs.length * questionIds.length) };
}
