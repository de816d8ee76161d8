/**
 * What the advantage estimators see of one trajectory: its token-level rewards and masks over
 * the whole token sequence (prompt, generated turns, tool results). Rewards sit on policy
 * tokens only: a call's process reward on the call's last token, the outcome reward on the
 * last generated token, and (with KL in the reward) −β·KL on every generated token.
 */
export interface RlSample {
  /** The dataset row's group (GRPO / RLOO compare samples within a group). */
  group: number;
  /** 1 where the policy generated the token. */
  mask: Uint8Array;
  /** Per-token reward, zero off policy tokens. */
  rewards: Float64Array;
  /** Critic values per token (PPO), aligned with the tokens. */
  values?: Float32Array;
}

/** Per-token advantages (and, for PPO, returns), zero off policy tokens. */
export interface Advantages {
  advantages: Float32Array[];
  returns?: Float32Array[];
}

/** Indices of policy tokens, in order. */
export function policyPositions(mask: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) out.push(i);
  return out;
}

/** Reward-to-go over policy tokens: G_t = Σ_{k ≥ t} γ^(k−t) r_k, counting steps in policy tokens only. */
export function rewardToGo(sample: RlSample, gamma = 1): Float64Array {
  const out = new Float64Array(sample.mask.length);
  let acc = 0;
  for (let i = sample.mask.length - 1; i >= 0; i--) {
    if (!sample.mask[i]) continue;
    acc = sample.rewards[i] + gamma * acc;
    out[i] = acc;
  }
  return out;
}

/** The trajectory's return: the reward-to-go at its first policy token. */
export function trajectoryReturn(sample: RlSample, gamma = 1): number {
  const positions = policyPositions(sample.mask);
  return positions.length ? rewardToGo(sample, gamma)[positions[0]] : 0;
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
