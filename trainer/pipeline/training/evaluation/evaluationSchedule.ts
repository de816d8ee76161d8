import type { TrainingConfig } from '../config/trainingConfig';

/**
 * When and on what a run evaluates on held-out rows, by default. Evaluating during training is
 * what lets a run keep its best weights (bestCheckpoint.ts) and notice a held-out drop
 * (health.ts), so it is on whenever there are held-out rows; it is also the most expensive thing
 * a run does besides training, so it is kept to a few evaluations on a bounded, fixed subset.
 */

/** Every ⌈steps / 5⌉ steps: five or six evaluations in all with the ones before and after (16 steps: every 4; 40: every 8; under 5 steps: every step). */
const EVALUATIONS_PER_RUN = 5;

/**
 * Rows an evaluation during training rolls out, unless `evaluation.samples` says: the first 100
 * (held-out sets of the examples have 30–100). The same rows every time, and the final
 * evaluation too, so the best and the before → after comparison are over the same questions; the
 * standard error of a 0–1 score over 100 rows is at most 5 points (heldOutMin in healthSettings.ts
 * is set from it). `rollout-studio eval` scores every row unless --samples says otherwise.
 */
export const DEFAULT_EVALUATION_ROWS = 100;

/** Evaluate every this many RL steps, besides before and after (0: only those two); the default is 0 without held-out rows. */
export function evaluationEvery(config: Pick<TrainingConfig, 'evaluation' | 'data'>, totalSteps: number): number {
  if (config.evaluation.every !== undefined) return config.evaluation.every;
  return (config.evaluation.data ?? config.data.eval) === undefined
    ? 0
    : Math.max(1, Math.ceil(totalSteps / EVALUATIONS_PER_RUN));
}

/** How many of the held-out rows (from the first) an evaluation during training uses. */
export function evaluationRows(config: Pick<TrainingConfig, 'evaluation'>, available: number): number {
  return Math.min(available, config.evaluation.samples ?? DEFAULT_EVALUATION_ROWS);
}
