/**
 * Estimators of KL(π‖π_ref) per sampled token from log-probs (Schulman's k1, k2, k3), for
 * KL in the reward. The same estimators exist as graph ops for KL as a loss (losses.ts).
 */
export type KlEstimator = 'k1' | 'k2' | 'k3';

/**
 * k3 = π_ref/π − log(π_ref/π) − 1 grows like e^{−r} when a sampled token's probability falls far
 * below the reference's (r = log π − log π_ref ≪ 0): one token whose probability an update cut by
 * e^17 gives 2.4·10⁷ and swamps a batch's mean (measured: Adam's first full-fine-tuning step at lr
 * 1e-4 moved single tokens by 5–7 nats). As verl's `low_var_kl` (verl/trainer/ppo/core_algos.py,
 * `kl_penalty`) and OpenRLHF's `k3` do, the log-ratio is clamped to ±20 before the exponential and
 * the estimate to at most 10; past either bound the token's KL term has no gradient (torch.clamp's).
 */
export const K3_LOG_RATIO_BOUND = 20;
export const K3_BOUND = 10;

export function klEstimate(logprob: number, refLogprob: number, estimator: KlEstimator): number {
  const logRatio = logprob - refLogprob;
  switch (estimator) {
    case 'k1':
      return logRatio;
    case 'k2':
      return 0.5 * logRatio * logRatio;
    case 'k3': {
      const r = Math.min(Math.max(logRatio, -K3_LOG_RATIO_BOUND), K3_LOG_RATIO_BOUND);
      return Math.min(Math.exp(-r) + r - 1, K3_BOUND);
    }
  }
}

/**
 * KL in the reward: −β·KL(t) on every token the policy sampled (`sampled` is the trajectory's
 * own mask, whatever the loss mask: a tool result or template token was not sampled, has no
 * sampling log-prob, and so no KL to penalise), 0 elsewhere.
 */
export function klPenalty(
  sampled: ArrayLike<number>,
  logprobs: ArrayLike<number>,
  refLogprobs: ArrayLike<number>,
  beta: number,
  estimator: KlEstimator,
): Float64Array {
  const out = new Float64Array(sampled.length);
  for (let i = 0; i < out.length; i++)
    if (sampled[i]) out[i] = -beta * klEstimate(logprobs[i], refLogprobs[i], estimator);
  return out;
}

/**
 * The mean per-token log-ratio log π − log π_ref over every policy token of the batch (the k1
 * estimate of KL(π‖π_ref)): what `kl/mean` reports, whatever estimator the penalty uses.
 */
export function meanKl(
  logprobs: ReadonlyArray<ArrayLike<number>>,
  refLogprobs: ReadonlyArray<ArrayLike<number>>,
  masks: ReadonlyArray<ArrayLike<number>>,
): number {
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
