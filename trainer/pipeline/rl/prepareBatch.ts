import type { Trajectory } from '../rollout/trajectory';
import { computeAdvantages, type EstimatorSettings } from './advantageEstimators';
import type { BatchImage } from '../../foundations/models/vision/visionBatch';
import type { TrainingSequence } from './batching';
import { klPenalty, meanKl, type KlEstimator } from './kl';
import type { Advantages, RlSample } from './samples';
import { definedFields } from '../../contract/definedFields';

/**
 * From scored trajectories to what the update trains on: the loss mask, the KL to the reference
 * policy (reported, and subtracted from the rewards when configured so), the critic's values,
 * the advantages, and the per-token training sequences. Pure: the log-probs and values the
 * model computes for the batch come in as `scores`.
 */

export interface BatchSettings {
  /** `generated`: the tokens the policy sampled; `response`: every token after the prompt (an ablation). */
  lossMask: 'generated' | 'response';
  kl: { coef: number; estimator: KlEstimator; mode: 'loss' | 'reward' };
  estimator: EstimatorSettings;
}

/** Per-token log-probs and values the model computed for the batch (PolicyTrainer.scoreReferenceAndValues). */
export interface BatchScores {
  /** The reference policy's log-probs (when a KL term is configured). */
  reference?: Float32Array[];
  /** The critic's values (PPO). */
  values?: Float32Array[];
  /** The current policy's log-probs (the `response` loss mask: tokens the policy did not sample have no sampling log-prob). */
  policy?: Float32Array[];
}

export interface PreparedBatch {
  /** What the update trains on, one per trajectory — RFT's only for the kept trajectories. */
  sequences: TrainingSequence[];
  /** Per trajectory, aligned with the trajectories (RFT: 0 on every token of one not kept). */
  advantages: Advantages;
  /** RFT: the share of the batch's trajectories kept by the filter. */
  keptFraction?: number;
  /** Mean log π − log π_ref over the generated tokens, when a reference was scored. */
  klMean?: number;
}

/**
 * The loss mask of each trajectory: its generated tokens, or (the ablation) every token after the
 * prompt. Image tokens (`imageTokenId`, vision-language models) are never in the loss.
 */
export function lossMasks(
  trajectories: readonly Trajectory<object>[],
  lossMask: BatchSettings['lossMask'],
  imageTokenId?: number,
): Uint8Array[] {
  return trajectories.map((t) =>
    lossMask === 'response'
      ? Uint8Array.from(t.ids, (id, k) => (k >= t.promptLength && id !== imageTokenId ? 1 : 0))
      : Uint8Array.from(t.mask),
  );
}

/** The images of a trajectory's image-token runs, in order, as the batch packer takes them. */
export function sequenceImages(trajectory: Trajectory<object>): { images?: BatchImage[] } {
  const images = trajectory.images?.map(({ image }) => ({
    key: image.sha256,
    grid: image.grid,
    patches: image.patches,
  }));
  return definedFields({ images: images?.length ? images : undefined });
}

/** What the model must score for this batch before `prepareBatch`. */
export function scoresNeeded(settings: BatchSettings): { reference: boolean; values: boolean; policy: boolean } {
  return {
    reference: settings.kl.coef > 0,
    values: settings.estimator.name === 'ppo',
    policy: settings.lossMask === 'response',
  };
}

export function prepareBatch(
  trajectories: readonly Trajectory<object>[],
  samples: RlSample[],
  masks: readonly Uint8Array[],
  scores: BatchScores,
  settings: BatchSettings,
): PreparedBatch {
  if (settings.lossMask === 'response') samples.forEach((s, i) => (s.mask = masks[i]));
  let klMean: number | undefined;
  if (scores.reference) {
    const reference = scores.reference;
    klMean = meanKl(
      trajectories.map((t) => t.logprobs),
      reference,
      trajectories.map((t) => t.mask),
    );
    if (settings.kl.mode === 'reward') {
      // On the sampled tokens only (the trajectory's mask), whatever the loss mask covers.
      samples.forEach(
        (s, i) =>
          (s.kl = klPenalty(
            trajectories[i].mask,
            trajectories[i].logprobs,
            reference[i],
            settings.kl.coef,
            settings.kl.estimator,
          )),
      );
    }
  }
  if (scores.values) samples.forEach((s, i) => (s.values = scores.values![i]));
  const advantages = computeAdvantages(settings.estimator, samples);
  const sequences: TrainingSequence[] = trajectories.map((t, i) => ({
    ids: t.ids,
    mask: masks[i],
    ...sequenceImages(t),
    ...definedFields({
      constraints: t.constrained,
      logprobs: samplingLogprobs(t, scores.policy?.[i]),
      advantages: advantages.advantages[i],
      returns: advantages.returns?.[i],
      values: advantages.returns ? scores.values![i] : undefined,
      refLogprobs: scores.reference?.[i],
    }),
  }));
  // RFT trains on the kept trajectories only, so its token-mean is over their tokens, as SFT on them would be.
  const kept = advantages.kept;
  if (kept)
    return {
      sequences: sequences.filter((_, i) => kept[i]),
      advantages,
      keptFraction: kept.filter(Boolean).length / Math.max(kept.length, 1),
      ...definedFields({ klMean }),
    };
  return { sequences, advantages, ...definedFields({ klMean }) };
}

/**
 * The "old" log-probs of the ratio: the sampling log-probs. Tokens the policy did not sample
 * (the `response` loss mask) have none; the current policy's stand in, so their ratio starts at 1.
 */
function samplingLogprobs(trajectory: Trajectory<object>, current: Float32Array | undefined): Float32Array {
  if (!current) return Float32Array.from(trajectory.logprobs);
  return Float32Array.from(trajectory.logprobs, (lp, k) => (trajectory.mask[k] ? lp : current[k]));
}
