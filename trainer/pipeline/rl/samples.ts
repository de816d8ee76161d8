/**
 * What the advantage estimators see of one trajectory: its mask over the whole token sequence
 * (prompt, generated turns, tool results) and its rewards, kept apart by kind because the
 * estimators treat them differently (trainer/pipeline/rl/ADVANTAGES.md): the outcome reward on the last
 * generated token, each call's (scaled) process reward on the call's last token, and, with KL in
 * the reward, −β·KL on each generated token.
 */
export interface RlSample {
  /** The dataset row's group (GRPO / RLOO compare samples within a group). */
  group: number;
  /** 1 where the loss (and the estimator) counts the token: the generated tokens, or every response token in the `response` ablation. */
  mask: Uint8Array;
  /** The outcome reward R and the token it sits on (the last generated token). */
  outcome: { token: number; reward: number };
  /** Each call's scaled process reward, in call order, on the call's last (generated) token. */
  calls: ReadonlyArray<{ token: number; reward: number }>;
  /** KL in the reward: −β·KL(t) on each token the policy sampled, 0 elsewhere. */
  kl?: Float64Array;
  /** Critic values per token (PPO), aligned with the tokens. */
  values?: Float32Array;
}

/** Per-token advantages (and, for PPO, returns), zero off policy tokens. */
export interface Advantages {
  advantages: Float32Array[];
  returns?: Float32Array[];
  /** RFT: which trajectories passed the filter; the others are not trained on at all. */
  kept?: boolean[];
}

/** Indices of policy tokens, in order. */
export function policyPositions(mask: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) out.push(i);
  return out;
}

/** Every reward of the sample on its token: outcome + process + KL (what PPO and REINFORCE++ sum). */
export function tokenRewards(sample: RlSample): Float64Array {
  const out = sample.kl ? Float64Array.from(sample.kl) : new Float64Array(sample.mask.length);
  out[sample.outcome.token] += sample.outcome.reward;
  for (const call of sample.calls) out[call.token] += call.reward;
  return out;
}

/** Reward-to-go over the masked tokens: G_t = Σ_{k ≥ t} γ^(k−t) r_k, counting steps in masked tokens only. */
export function rewardToGo(rewards: Float64Array, mask: Uint8Array, gamma = 1): Float64Array {
  const out = new Float64Array(mask.length);
  let acc = 0;
  for (let i = mask.length - 1; i >= 0; i--) {
    if (!mask[i]) continue;
    acc = rewards[i] + gamma * acc;
    out[i] = acc;
  }
  return out;
}

/** Σ_t −β·KL(t): the sequence's KL penalty, 0 without KL in the reward. */
export function klSum(sample: RlSample): number {
  return sample.kl ? sample.kl.reduce((a, b) => a + b, 0) : 0;
}

/** Group the sample indices by `group`. */
export function groups(samples: readonly RlSample[]): Map<number, number[]> {
  const map = new Map<number, number[]>();
  samples.forEach((s, i) => {
    const list = map.get(s.group) ?? [];
    list.push(i);
    map.set(s.group, list);
  });
  return map;
}
