import type { Tensor } from '../../foundations/engine/graph';
import * as op from '../../foundations/engine/ops';
import { K3_BOUND, K3_LOG_RATIO_BOUND, type KlEstimator } from './kl';

/**
 * The RL objective as graph nodes over per-token tensors [B, T]. All per-token terms are
 * multiplied by `mask` (1 on policy tokens) before aggregation, so prompt, template and
 * tool-result tokens never carry gradient.
 */
/**
 * How per-token terms become one number: `token-mean` over every policy token of the step;
 * `seq-mean-token-mean` the mean over sequences of each one's token mean (the GRPO paper);
 * `seq-mean-token-sum-norm` each sequence's token sum divided by a constant C, averaged over the
 * sequences (Dr. GRPO: no length normalisation per sequence; verl's name for it).
 */
export type LossAggregation = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';

export interface PolicyLossConfig {
  /**
   * `clipped-ratio` (the default): PPO's clipped surrogate. `log-likelihood`: −log π·A with no
   * ratio and no clip — RFT's SFT loss (A is 1 on the kept trajectories' tokens), whose gradient
   * must not vanish once the policy has moved, as SFT's does not.
   */
  surrogate?: 'clipped-ratio' | 'log-likelihood';
  /** PPO ratio clip: ratio ∈ [1 − clipLow, 1 + clipHigh]. */
  clipLow: number;
  clipHigh: number;
  /** Dual-clip PPO's lower bound c (> 1) for negative advantages; undefined: off. */
  dualClip?: number;
  aggregation: LossAggregation;
  /** `seq-mean-token-sum-norm`: the constant C (Dr. GRPO: the most tokens a response can have). */
  lossScaleFactor?: number;
  /** KL to the reference policy as a loss term: coefficient and estimator; 0: off. */
  klCoef: number;
  klEstimator: KlEstimator;
  /** Entropy bonus coefficient (subtracted from the loss); 0: off. */
  entropyCoef: number;
}

export interface PolicyLossInputs {
  logprobs: Tensor;
  oldLogprobs: Tensor;
  advantages: Tensor;
  mask: Tensor;
  refLogprobs?: Tensor | undefined;
  entropy?: Tensor | undefined;
  /**
   * Denominators over the whole optimizer batch (all micro-batches), so gradient accumulation
   * gives exactly the full-batch gradient: total policy tokens (token-mean) or total sequences
   * (seq-mean-token-mean). Computed from this micro-batch's mask when absent.
   */
  tokenTotal?: Tensor | undefined;
  sequenceTotal?: Tensor | undefined;
}

export interface PolicyLossOutputs {
  loss: Tensor;
  policyLoss: Tensor;
  clipFraction: Tensor;
  /** Mean of k3(π_old, π) over policy tokens: how far the update moved the policy. */
  approxKl: Tensor;
  klLoss?: Tensor;
  entropy?: Tensor;
}

/** Σ x·mask aggregated as configured (`lossScaleFactor`: C of `seq-mean-token-sum-norm`). */
export function aggregate(
  x: Tensor,
  mask: Tensor,
  mode: LossAggregation,
  totals: { tokenTotal?: Tensor | undefined; sequenceTotal?: Tensor | undefined } = {},
  lossScaleFactor?: number,
): Tensor {
  const masked = op.mul(x, mask);
  if (mode === 'token-mean')
    return op.div(op.reduceSum(masked), totals.tokenTotal ?? op.maximum(op.reduceSum(mask), 1));
  const perSequenceTokens = op.reduceSum(mask, [1]);
  const sequences =
    totals.sequenceTotal ?? op.maximum(op.reduceSum(op.cast(op.greater(perSequenceTokens, 0), x.dtype)), 1);
  if (mode === 'seq-mean-token-sum-norm') {
    if (!(lossScaleFactor !== undefined && lossScaleFactor > 0))
      throw new Error(`seq-mean-token-sum-norm needs a constant lossScaleFactor > 0, got ${lossScaleFactor}`);
    return op.div(op.reduceSum(masked), op.mul(sequences, lossScaleFactor));
  }
  const perSequence = op.div(op.reduceSum(masked, [1]), op.maximum(perSequenceTokens, 1));
  return op.div(op.reduceSum(perSequence), sequences);
}

/** Per-token KL(π‖π_ref) estimate from log-probs of the sampled tokens. */
export function klTerm(logprobs: Tensor, refLogprobs: Tensor, estimator: KlEstimator): Tensor {
  const logRatio = op.sub(logprobs, refLogprobs);
  switch (estimator) {
    case 'k1':
      return logRatio;
    case 'k2':
      return op.mul(op.mul(logRatio, logRatio), 0.5);
    case 'k3': {
      // Bounded as klEstimate's k3 is (kl.ts says why): the log-ratio within ±20, the estimate at most 10.
      const r = op.clip(logRatio, -K3_LOG_RATIO_BOUND, K3_LOG_RATIO_BOUND);
      return op.clip(op.sub(op.add(op.exp(op.neg(r)), r), 1), undefined, K3_BOUND);
    }
  }
}

/**
 * PPO's clipped surrogate (GRPO, RLOO and REINFORCE++ use it too), with dual clip, KL and
 * entropy terms. Per token: ratio = exp(logπ − logπ_old);
 * pg = −min(ratio·A, clip(ratio)·A), and for A < 0 with dual clip: min(pg, −c·A).
 * With the `log-likelihood` surrogate (RFT): pg = −logπ·A, nothing clipped (clip fraction 0).
 */
export function policyLoss(inputs: PolicyLossInputs, config: PolicyLossConfig): PolicyLossOutputs {
  const g = inputs.logprobs.graph;
  return g.withScope('policy_loss', () => {
    const { logprobs, oldLogprobs, mask } = inputs;
    const likelihood = config.surrogate === 'log-likelihood';
    const ratio = op.exp(op.sub(logprobs, oldLogprobs));
    const pg = likelihood
      ? op.neg(op.mul(logprobs, inputs.advantages))
      : clippedSurrogate(ratio, inputs.advantages, config);
    const totals = { tokenTotal: inputs.tokenTotal, sequenceTotal: inputs.sequenceTotal };
    const policy = aggregate(pg, mask, config.aggregation, totals, config.lossScaleFactor);
    let loss = policy;
    const outside = op.or(op.less(ratio, 1 - config.clipLow), op.greater(ratio, 1 + config.clipHigh));
    // Nothing is clipped under the likelihood surrogate: its fraction is 0 (kept a graph value, from the mask, so it stays an output).
    const clipFraction = likelihood
      ? op.mul(op.reduceSum(mask), 0)
      : aggregate(op.cast(outside, logprobs.dtype), mask, 'token-mean', { tokenTotal: inputs.tokenTotal });
    const approxKl = aggregate(g.stopGradient(klTerm(oldLogprobs, logprobs, 'k3')), mask, 'token-mean', {
      tokenTotal: inputs.tokenTotal,
    });
    const out: PolicyLossOutputs = { loss, policyLoss: policy, clipFraction, approxKl };
    if (config.klCoef > 0) {
      if (!inputs.refLogprobs) throw new Error('klCoef > 0 needs reference log-probs');
      out.klLoss = aggregate(
        klTerm(logprobs, inputs.refLogprobs, config.klEstimator),
        mask,
        config.aggregation,
        totals,
        config.lossScaleFactor,
      );
      loss = op.add(loss, op.mul(out.klLoss, config.klCoef));
    }
    if (inputs.entropy) {
      out.entropy = aggregate(inputs.entropy, mask, config.aggregation, totals, config.lossScaleFactor);
      if (config.entropyCoef > 0) loss = op.sub(loss, op.mul(out.entropy, config.entropyCoef));
    }
    out.loss = loss;
    return out;
  });
}

/** −min(ratio·A, clip(ratio)·A) per token, and for A < 0 with dual clip: min(that, −c·A). */
function clippedSurrogate(ratio: Tensor, advantages: Tensor, config: PolicyLossConfig): Tensor {
  const unclipped = op.mul(ratio, advantages);
  const clipped = op.mul(op.clip(ratio, 1 - config.clipLow, 1 + config.clipHigh), advantages);
  const pg = op.neg(op.minimum(unclipped, clipped));
  if (config.dualClip === undefined) return pg;
  if (!(config.dualClip > 1)) throw new Error(`dualClip must be greater than 1, got ${config.dualClip}`);
  return op.where(op.less(advantages, 0), op.minimum(pg, op.mul(advantages, -config.dualClip)), pg);
}

export interface ValueLossConfig {
  /** Clip the new value to within this of the old value (PPO); undefined: no clipping. */
  clip?: number | undefined;
  aggregation: LossAggregation;
  lossScaleFactor?: number | undefined;
}

/** The critic's loss: ½·max((V − R)², (V_old + clip(V − V_old) − R)²) over policy tokens. */
export function valueLoss(
  values: Tensor,
  oldValues: Tensor,
  returns: Tensor,
  mask: Tensor,
  config: ValueLossConfig,
  totals: { tokenTotal?: Tensor | undefined; sequenceTotal?: Tensor | undefined } = {},
): Tensor {
  const g = values.graph;
  return g.withScope('value_loss', () => {
    const error = op.sub(values, returns);
    let squared = op.mul(error, error);
    if (config.clip !== undefined) {
      const clippedValues = op.add(oldValues, op.clip(op.sub(values, oldValues), -config.clip, config.clip));
      const clippedError = op.sub(clippedValues, returns);
      squared = op.maximum(squared, op.mul(clippedError, clippedError));
    }
    return op.mul(aggregate(squared, mask, config.aggregation, totals, config.lossScaleFactor), 0.5);
  });
}
