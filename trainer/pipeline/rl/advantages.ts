import { groups, klSum, policyPositions, rewardToGo, tokenRewards, type Advantages, type RlSample } from './samples';

/**
 * Advantage estimators over whole agent trajectories with outcome rewards, per-call process
 * rewards and (optionally) KL in the reward. The math, estimator by estimator, with where each
 * choice comes from, is in ADVANTAGES.md next to this file; in short:
 *
 * - The outcome side of a trajectory is R = outcome + Σ_t −β·KL(t) (the KL part only with KL in
 *   the reward): one number per trajectory, compared within its group as the outcome-only
 *   algorithm compares it (GRPO: standardised; Dr. GRPO: centred; RLOO: leave-one-out).
 * - The process side is compared call by call: each call's reward minus the group's mean reward
 *   of the same-numbered call (a member with fewer calls counts 0 for the calls it did not make,
 *   on its last token; RLOO leaves the sample itself out), summed over the calls at or after the
 *   token. So a group whose outcomes tie and
 *   whose calls earned the same gets exactly zero advantage, and a call's credit goes to the
 *   tokens up to and including it, not to the tokens after it. The process side is never divided
 *   by the outcome's standard deviation (with tied outcomes that is 0 and would blow it up).
 * - REINFORCE++ (without baseline) and PPO (GAE) take every reward where it sits on its token.
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

/** The outcome side of a trajectory: its outcome reward plus its summed KL penalty (when KL is in the reward). */
function outcomeReturn(sample: RlSample): number {
  return sample.outcome.reward + klSum(sample);
}

/**
 * The group's baseline for each call index j: the mean of its members' j-th call rewards, a member
 * with fewer calls counting 0 — or, with `leaveOut`, the mean over the other members only (RLOO).
 */
function callBaselines(samples: readonly RlSample[], members: readonly number[], leaveOut?: number): number[] {
  const longest = Math.max(0, ...members.map((i) => samples[i].calls.length));
  const others = members.filter((i) => i !== leaveOut);
  if (others.length === 0) return new Array<number>(longest).fill(0);
  return Array.from(
    { length: longest },
    (_, j) => others.reduce((a, i) => a + (samples[i].calls[j]?.reward ?? 0), 0) / others.length,
  );
}

/**
 * Σ over the calls at or after each masked token of (call reward − its baseline): the process side
 * of the advantage. A call the sample did not make (j beyond its own calls) counts as reward 0 on
 * its last generated token, so at the first token the process side is the sample's process return
 * minus the group's mean process return, and across the group it sums to zero.
 */
function processToGo(sample: RlSample, baselines: readonly number[]): Float64Array {
  const centred = new Float64Array(sample.mask.length);
  baselines.forEach((baseline, j) => {
    const call = sample.calls[j];
    if (call) centred[call.token] += call.reward - baseline;
    else centred[sample.outcome.token] -= baseline;
  });
  return rewardToGo(centred, sample.mask);
}

export interface GrpoOptions {
  /** Divide the outcome side by the group's standard deviation (GRPO); false is Dr. GRPO. */
  scaleByStd: boolean;
}

/** GRPO / Dr. GRPO: A_t = (R − mean_g R) / (std_g R + ε) + Σ_{calls j at or after t} (p_j − mean_g p_j). */
export function grpoAdvantages(samples: readonly RlSample[], options: GrpoOptions): Advantages {
  const advantages = new Array<Float32Array>(samples.length);
  for (const members of groups(samples).values()) {
    const returns = members.map((i) => outcomeReturn(samples[i]));
    const { mean, std } = meanStd(returns);
    const scale = options.scaleByStd ? std + EPS : 1;
    const baselines = callBaselines(samples, members);
    members.forEach((i, k) => {
      // The outcome side is standardised; the process side is not (see the module comment).
      const relative = (returns[k] - mean) / scale;
      const process = processToGo(samples[i], baselines);
      advantages[i] = fill(samples[i], (t) => relative + process[t]);
    });
  }
  return { advantages };
}

/** RLOO: A_t = (R − mean of the others' R) + Σ_{calls j at or after t} (p_j − mean of the others' p_j). */
export function rlooAdvantages(samples: readonly RlSample[]): Advantages {
  const advantages = new Array<Float32Array>(samples.length);
  for (const members of groups(samples).values()) {
    const returns = members.map((i) => outcomeReturn(samples[i]));
    const total = returns.reduce((a, b) => a + b, 0);
    members.forEach((i, k) => {
      const baseline = members.length > 1 ? (total - returns[k]) / (members.length - 1) : 0;
      const process = processToGo(samples[i], callBaselines(samples, members, i));
      advantages[i] = fill(samples[i], (t) => returns[k] - baseline + process[t]);
    });
  }
  return { advantages };
}

export interface ReinforcePlusPlusOptions {
  /** Discount over policy tokens (REINFORCE++ without baseline). */
  gamma: number;
  /** REINFORCE++-baseline: group-centred as GRPO without the std (then whitened); else the discounted per-token reward-to-go. */
  baseline: boolean;
}

/**
 * REINFORCE++: the discounted reward-to-go of every per-token reward (outcome, calls, −β·KL),
 * whitened over the batch's policy tokens. REINFORCE++-baseline: the group-centred advantage of
 * Dr. GRPO (outcome side minus the group mean, process side call by call), whitened over the batch.
 */
export function reinforcePlusPlusAdvantages(
  samples: readonly RlSample[],
  options: ReinforcePlusPlusOptions,
): Advantages {
  const raw = options.baseline
    ? grpoAdvantages(samples, { scaleByStd: false }).advantages.map((a) => Float64Array.from(a))
    : samples.map((s) => rewardToGo(tokenRewards(s), s.mask, options.gamma));
  return { advantages: whiten(samples, raw) };
}

/** (x − mean) / (std + ε) over every policy token of the batch. */
function whiten(samples: readonly RlSample[], raw: ArrayLike<number>[]): Float32Array[] {
  const all: number[] = [];
  samples.forEach((s, i) => policyPositions(s.mask).forEach((t) => all.push(raw[i][t])));
  const { mean, std } = all.length ? meanStd(all) : { mean: 0, std: 0 };
  return samples.map((s, i) => fill(s, (t) => (raw[i][t] - mean) / (std + EPS)));
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
    if (!s.values) throw new Error('GAE needs critic values for every sample (PPO with a critic)');
    const rewards = tokenRewards(s);
    const positions = policyPositions(s.mask);
    const adv = new Float32Array(s.mask.length);
    const ret = new Float32Array(s.mask.length);
    let next = 0;
    let nextValue = 0;
    for (let k = positions.length - 1; k >= 0; k--) {
      const t = positions[k];
      const delta = rewards[t] + options.gamma * nextValue - s.values[t];
      next = delta + options.gamma * options.lambda * next;
      adv[t] = next;
      ret[t] = next + s.values[t];
      nextValue = s.values[t];
    }
    advantages.push(adv);
    returns.push(ret);
  }
  return { advantages: options.whiten ? whiten(samples, advantages) : advantages, returns };
}

/**
 * RFT's default threshold on the outcome reward: 1, the reward of a correct answer under the
 * built-in outcome rewards (exact match and the like score 1 right, 0 wrong). STaR and ReST-EM keep
 * the samples whose answer is correct; see ADVANTAGES.md for why not RAFT's best-of-group.
 */
export const RFT_DEFAULT_THRESHOLD = 1;

/**
 * Rejection-sampling fine-tuning's filter and "advantage": a trajectory is kept when its outcome
 * reward — the outcome alone: no process reward, no KL — is at least `threshold` (a non-finite
 * outcome never is). Kept trajectories get 1 on every loss token, the others 0, so −log π·A over the
 * kept tokens is the SFT loss on them. Groups play no part: a group with none kept adds nothing.
 */
export function rftAdvantages(samples: readonly RlSample[], options: { threshold: number }): Advantages {
  const kept = samples.map((s) => Number.isFinite(s.outcome.reward) && s.outcome.reward >= options.threshold);
  return { advantages: samples.map((s, i) => fill(s, () => (kept[i] ? 1 : 0))), kept };
}
