import type { HostTensor } from '../../foundations/engine/runtime/tensors';
import type { Random } from '../../foundations/models/random';
import { packWithSharedPrefix, type PackedBatch } from '../../foundations/models/batch';
import { addVisionFeeds, sameImagesPrefixLimit, type BatchImage } from '../../foundations/models/vision/visionBatch';
import type { VisionConfig } from '../../foundations/models/vision/visionConfig';
import { biasFeeds, scoredTokenConstraints, type PositionConstraints } from '../../foundations/models/constraintBias';

/** One trajectory as the update sees it: its exact tokens and per-token training data. */
export interface TrainingSequence {
  ids: readonly number[];
  /** 1 on tokens the policy generated. */
  mask: Uint8Array;
  /** Sampling log-probs (the "old" policy), 0 where mask is 0. */
  logprobs: Float32Array;
  advantages: Float32Array;
  /** PPO: returns and the critic's values when the rollout was scored. */
  returns?: Float32Array;
  values?: Float32Array;
  /** KL as a loss: the reference policy's log-probs. */
  refLogprobs?: Float32Array;
  /** Vision-language models: the images of the sequence's image token runs, in order. */
  images?: readonly BatchImage[];
  /** Positions sampled under a constraint, and its allowed set (see Trajectory.constrained). */
  constraints?: PositionConstraints;
}

/**
 * Packs sequences for a scoring or training graph (shared prefix when they have one) and, for a
 * vision-language model, adds the image feeds. Image tokens are never scored: they are not
 * predicted, so the loss never covers them (a mask that marks one is a bug upstream).
 */
export function packSequences(
  sequences: readonly { ids: readonly number[]; images?: readonly BatchImage[] }[],
  score: readonly Uint8Array[],
  vision: VisionConfig | undefined,
  padId = 0,
): PackedBatch {
  if (vision) {
    sequences.forEach((s, b) => {
      const marked = s.ids.findIndex((id, t) => id === vision.imageTokenId && score[b][t] === 1);
      if (marked >= 0)
        throw new Error(
          `sequence ${b}: token ${marked} is an image token but the loss mask covers it; image tokens are never trained on`,
        );
    });
  }
  // Equal placeholder ids do not make equal images: the prefix stops where the pictures differ.
  const packed = packWithSharedPrefix(
    sequences.map((s) => s.ids),
    score,
    padId,
    vision ? sameImagesPrefixLimit(sequences, vision) : Infinity,
  );
  if (vision) addVisionFeeds(packed, sequences, vision);
  else if (sequences.some((s) => s.images?.length))
    throw new Error('the sequences hold images, but the model has no vision tower');
  return packed;
}

/** The bias inputs of a constrained scoring or update graph for a packed batch (a vocabulary of `vocab` logits). */
export function constraintFeeds(
  sequences: readonly { ids: readonly number[]; constraints?: PositionConstraints }[],
  score: readonly Uint8Array[],
  packed: PackedBatch,
  vocab: number,
): Record<string, HostTensor> {
  const perToken = scoredTokenConstraints(sequences, score, packed.prefix);
  if (perToken.length !== packed.scored)
    throw new Error(`${perToken.length} constraint slots for ${packed.scored} scored tokens`);
  return biasFeeds(perToken, vocab);
}

/** A per-token array laid out like the packed rows: row position t is sequence position prefix + t. */
function perToken(
  sequences: readonly TrainingSequence[],
  packed: PackedBatch,
  pick: (s: TrainingSequence) => ArrayLike<number> | undefined,
  name: string,
): HostTensor {
  const T = packed.length;
  const data = new Float32Array(sequences.length * T);
  sequences.forEach((s, b) => {
    const values = pick(s);
    if (!values) throw new Error(`sequence ${b} has no ${name}`);
    for (let t = packed.prefix; t < s.ids.length; t++) data[b * T + t - packed.prefix] = s.mask[t] ? values[t] : 0;
  });
  return { dtype: 'float32', shape: [sequences.length, T], data };
}

export interface StepTotals {
  tokens: number;
  sequences: number;
}

/**
 * The optimizer steps of a PPO-style update: `epochs` passes over the batch, each shuffled (with
 * the run's random stream) and split into `miniBatches` steps; each step's sequences sorted by
 * length, since micro-batches of similar lengths pad less and the step's gradient is the same in
 * any order. Shared by the policy and a separate critic so both follow one schedule.
 */
export function* miniBatchSteps<T extends { ids: ArrayLike<number> }>(
  sequences: readonly T[],
  epochs: number,
  miniBatches: number,
  random: Random,
): Generator<T[]> {
  const order = sequences.map((_, i) => i);
  for (let epoch = 0; epoch < epochs; epoch++) {
    random.shuffle(order);
    const perStep = Math.ceil(order.length / miniBatches);
    for (let start = 0; start < order.length; start += perStep)
      yield order
        .slice(start, start + perStep)
        .map((i) => sequences[i])
        .sort((a, b) => a.ids.length - b.ids.length);
  }
}

/** Policy tokens and sequences that have any, over the sequences of one optimizer step. */
export function stepTotals(sequences: readonly TrainingSequence[]): StepTotals {
  let tokens = 0;
  let withTokens = 0;
  for (const s of sequences) {
    const n = s.mask.reduce((a, m) => a + m, 0);
    tokens += n;
    if (n > 0) withTokens++;
  }
  return { tokens: Math.max(tokens, 1), sequences: Math.max(withTokens, 1) };
}

/**
 * The feeds of the policy-update graph for one micro-batch, packed with their shared prefix
 * given once when they have one (`shared` says which graph variant to run).
 */
export function policyBatchFeeds(
  sequences: readonly TrainingSequence[],
  totals: StepTotals,
  options: {
    invTemperature: number;
    value: boolean;
    ref: boolean;
    padId: number;
    vision?: VisionConfig | undefined;
    constrainedVocab?: number | undefined;
  },
): { feeds: Record<string, HostTensor>; shared: boolean } {
  const packed = packSequences(
    sequences,
    sequences.map((s) => s.mask),
    options.vision,
    options.padId,
  );
  const T = packed;
  const feeds: Record<string, HostTensor> = {
    ...packed.feeds,
    ...(options.constrainedVocab !== undefined
      ? constraintFeeds(
          sequences,
          sequences.map((s) => s.mask),
          packed,
          options.constrainedVocab,
        )
      : {}),
    inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(options.invTemperature) },
    old_logprobs: perToken(sequences, T, (s) => s.logprobs, 'sampling log-probs'),
    advantages: perToken(sequences, T, (s) => s.advantages, 'advantages'),
    loss_mask: perToken(sequences, T, (s) => s.mask, 'mask'),
    token_total: { dtype: 'float32', shape: [], data: Float32Array.of(totals.tokens) },
    sequence_total: { dtype: 'float32', shape: [], data: Float32Array.of(totals.sequences) },
  };
  if (options.ref) feeds.ref_logprobs = perToken(sequences, T, (s) => s.refLogprobs, 'reference log-probs');
  if (options.value) {
    feeds.returns = perToken(sequences, T, (s) => s.returns, 'returns');
    feeds.old_values = perToken(sequences, T, (s) => s.values, 'values');
  }
  return { feeds, shared: packed.prefix > 0 };
}

/** The feeds of a separate critic's value-loss graph for one micro-batch (returns and the values at rollout time). */
export function valueBatchFeeds(
  sequences: readonly TrainingSequence[],
  totals: StepTotals,
  vision?: VisionConfig,
): { feeds: Record<string, HostTensor>; shared: boolean } {
  const packed = packSequences(
    sequences,
    sequences.map((s) => s.mask),
    vision,
  );
  const feeds: Record<string, HostTensor> = {
    ...packed.feeds,
    loss_mask: perToken(sequences, packed, (s) => s.mask, 'mask'),
    returns: perToken(sequences, packed, (s) => s.returns, 'returns'),
    old_values: perToken(sequences, packed, (s) => s.values, 'values'),
    token_total: { dtype: 'float32', shape: [], data: Float32Array.of(totals.tokens) },
    sequence_total: { dtype: 'float32', shape: [], data: Float32Array.of(totals.sequences) },
  };
  return { feeds, shared: packed.prefix > 0 };
}
