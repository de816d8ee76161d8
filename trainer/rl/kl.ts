/**
 * Estimators of KL(π‖π_ref) per sampled token from log-probs (Schulman's k1, k2, k3), for
 * KL in the reward. The same estimators exist as graph ops for KL as a loss (losses.ts).
 */
export type KlEstimator = 'k1' | 'k2' | 'k3';

export function klEstimate(logprob: number, refLogprob: number, estimator: KlEstimator): number {
  const logRatio = logprob - refLogprob;
  switch (estimator) {
    case 'k1':
      return logRatio;
    case 'k2':
      return 0.5 * logRatio * logRatio;
    case 'k3':
      return Math.exp(-logRatio) + logRatio - 1;
  }
}

/**
 * KL in the reward: −β·KL(t) on every token the policy sampled (`sampled` is the trajectory's
 * own mask, whatever the loss mask: a tool result or template token was not sampled, has no
 * sampling log-prob, and so no KL to penalise), 0 elsewhere.
 */
export function klPenalty(sampled: ArrayLike<number>, logprobs: ArrayLike<number>, refLogprobs: ArrayLike<number>, beta: number, estimator: KlEstimator): Float64Array {
  const out = new Float64Array(sampled.length);
  for (let i = 0; i < out.length; i++) if (sampled[i]) out[i] = -beta * klEstimate(logprobs[i], refLogprobs[i], estimator);
  return out;
}

/**
 * The mean per-token log-ratio log π − log π_ref over every policy token of the batch (the k1
 * estimate of KL(π‖π_ref)): what `kl/mean` reports, whatever estimator the penalty uses.
 */
export function meanKl(logprobs: ReadonlyArray<ArrayLike<number>>, refLogprobs: ReadonlyArray<ArrayLike<number>>, masks: ReadonlyArray<ArrayLike<number>>): number {
  let sum = 0;
  let n = 0;
  masks.forEach((mask, i) => {
    for (let k = 0; k < mask.length; k++) {
      if (!mask[k]) continue;
      sum += logprobs[i][k] - refLogprobs[i][k];
      n++;
    }
  });
  return n ? sum / n : 0;
}
