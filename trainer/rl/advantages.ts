import { groups, policyPositions, rewardToGo, trajectoryReturn, type Advantages, type RlSample } from './samples';

/**
 * Advantage estimators. Every one accepts token-level rewards, so process rewards (a tool
 * call's reward on the call's last token) enter each algorithm in a defined way:
 *
 * - PPO (GAE): process rewards are ordinary per-token rewards in the TD errors.
 * - REINFORCE++: the advantage is the per-token reward-to-go, whitened over the batch, so a
 *   call's reward credits the tokens before it and not the tokens after.
 * - GRPO and RLOO: the baseline is computed from whole-trajectory returns R within the group
 *   (as in the outcome-only algorithms), and the per-token reward-to-go G_t adds the credit
 *   of where in the trajectory a reward was earned: A_t = (R − baseline) / scale + (G_t − R).
 *   With outcome rewards only, G_t = R for every token and this is exactly GRPO / RLOO; with
 *   process rewards, tokens that precede a rewarded call get that call's reward as extra
 *   credit over the tokens after it. Only the group-relative part is divided by the group's
 *   standard deviation: dividing G_t − baseline by it would blow the within-trajectory part
 *   up without bound when the group's returns tie (std 0) but its rewards sit at different
 *   tokens (a 0.1 penalty on a call became an advantage of 10⁵ on the tokens after it).
 */

const EPS = 1e-6;

function fill(sample: RlSample, value: (position: number) => number): Float32Array {
  const out = new Float32Array(sample.mask.length);
  for (let i = 0; i < out.length; i++) if (sample.mask[i]) out[i] = value(i);
  return out;
}

function meanStd(values: readonly number[]): { mean: number; std: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  // Unbiased (n − 1), as torch.std and the GRPO reference implementations use.
  const variance = values.length > 1 ? values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1) : 0;
  return { mean, std: Math.sqrt(variance) };
}

export interface GrpoOptions {
  /** Divide by the group's standard deviation (GRPO); false is Dr. GRPO. */
  scaleByStd: boolean;
}

export function grpoAdvantages(samples: readonly RlSample[], options: GrpoOptions): Advantages {
  const advantages = new Array<Float32Array>(samples.length);
  for (const members of groups(samples).values()) {
    const returns = members.map((i) => trajectoryReturn(samples[i]));
    const { mean, std } = meanStd(returns);
    const scale = options.scaleByStd ? std + EPS : 1;
    members.forEach((i, k) => {
      const g = rewardToGo(samples[i]);
      const relative = (returns[k] - mean) / scale;
      advantages[i] = fill(samples[i], (t) => relative + (g[t] - returns[k]));
    });
  }
  return { advantages };
}

/** RLOO: each sample's baseline is the mean return of the other samples of its group. */
export function rlooAdvantages(samples: readonly RlSample[]): Advantages {
  const advantages = new Array<Float32Array>(samples.length);
  for (const members of groups(samples).values()) {
    const returns = members.map((i) => trajectoryReturn(samples[i]));
    const total = returns.reduce((a, b) => a + b, 0);
    members.forEach((i, k) => {
      const baseline = members.length > 1 ? (total - returns[k]) / (members.length - 1) : 0;
      const g = rewardToGo(samples[i]);
      advantages[i] = fill(samples[i], (t) => g[t] - baseline);
    });
  }
  return { advantages };
}

export interface ReinforcePlusPlusOptions {
  gamma: number;
  /** Subtract the group's mean return first (REINFORCE++ with baseline). */
  baseline: boolean;
}

/** REINFORCE++: per-token discounted reward-to-go, optionally minus the group mean, whitened over the batch's policy tokens. */
export function reinforcePlusPlusAdvantages(samples: readonly RlSample[], options: ReinforcePlusPlusOptions): Advantages {
  const raw = samples.map((s) => rewardToGo(s, options.gamma));
  if (options.baseline) {
    for (const members of groups(samples).values()) {
      const mean = members.reduce((a, i) => a + trajectoryReturn(samples[i], options.gamma), 0) / members.length;
      for (const i of members) for (const t of policyPositions(samples[i].mask)) raw[i][t] -= mean;
    }
  }
  const all: number[] = [];
  samples.forEach((s, i) => policyPositions(s.mask).forEach((t) => all.push(raw[i][t])));
  const { mean, std } = all.length ? meanStd(all) : { mean: 0, std: 0 };
  return { advantages: samples.map((s, i) => fill(s, (t) => (raw[i][t] - mean) / (std + EPS))) };
}

export interface GaeOptions {
  gamma: number;
  lambda: number;
  /** Whiten the advantages over the batch's policy tokens (PPO's usual practice). */
  whiten: boolean;
}

/**
 * Generalised advantage estimation over policy tokens only: prompt, template and tool-result
 * tokens are not time steps (the policy did not act there), so the TD error links each
 * generated token to the next generated token. The value after the last token is 0.
 */
export function gaeAdvantages(samples: readonly RlSample[], options: GaeOptions): Advantages {
  const advantages: Float32Array[] = [];
  const returns: Float32Array[] = [];
  for (const s of samples) {
    if (!s.values) throw new Error('GAE needs critic values for every sample (PPO with a value head)');
    const positions = policyPositions(s.mask);
    const adv = new Float32Array(s.mask.length);
    const ret = new Float32Array(s.mask.length);
    let next = 0;
    let nextValue = 0;
    for (let k = positions.length - 1; k >= 0; k--) {
      const t = positions[k];
      const delta = s.rewards[t] + options.gamma * nextValue - s.values[t];
      next = delta + options.gamma * options.lambda * next;
      adv[t] = next;
      ret[t] = next + s.values[t];
      nextValue = s.values[t];
    }
    advantages.push(adv);
    returns.push(ret);
  }
  if (options.whiten) {
    const all: number[] = [];
    samples.forEach((s, i) => policyPositions(s.mask).forEach((t) => all.push(advantages[i][t])));
    const { mean, std } = meanStd(all);
    samples.forEach((s, i) => policyPositions(s.mask).forEach((t) => (advantages[i][t] = (advantages[i][t] - mean) / (std + EPS))));
  }
  return { advantages, returns };
}
