import {
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rftAdvantages,
  rlooAdvantages,
  RFT_DEFAULT_THRESHOLD,
} from './advantages';
import type { Advantages, RlSample } from './samples';

/** What picks and parameterises an advantage estimator (the training config's `algorithm` section has these fields). */
export interface EstimatorSettings {
  name: 'grpo' | 'dr-grpo' | 'rloo' | 'reinforce++' | 'reinforce++-baseline' | 'ppo' | 'rft';
  /** GRPO: divide the outcome side by the group's standard deviation (Dr. GRPO never does). */
  scaleByStd: boolean;
  gamma: number;
  /** GAE's λ (PPO). */
  lambda: number;
  /** RFT: the outcome reward a trajectory needs to be trained on (default RFT_DEFAULT_THRESHOLD). */
  rftThreshold?: number | undefined;
}

/** The configured algorithm's advantages for a scored batch (PPO's samples carry critic values). */
export function computeAdvantages(config: EstimatorSettings, samples: readonly RlSample[]): Advantages {
  switch (config.name) {
    case 'grpo':
      return grpoAdvantages(samples, { scaleByStd: config.scaleByStd });
    case 'dr-grpo':
      return grpoAdvantages(samples, { scaleByStd: false });
    case 'rloo':
      return rlooAdvantages(samples);
    case 'reinforce++':
      return reinforcePlusPlusAdvantages(samples, { gamma: config.gamma, baseline: false });
    case 'reinforce++-baseline':
      return reinforcePlusPlusAdvantages(samples, { gamma: config.gamma, baseline: true });
    case 'ppo':
      return gaeAdvantages(samples, { gamma: config.gamma, lambda: config.lambda, whiten: true });
    case 'rft':
      return rftAdvantages(samples, { threshold: config.rftThreshold ?? RFT_DEFAULT_THRESHOLD });
  }
}

/** The trajectory's advantage as one number, when every policy token got the same one. */
export function scalarAdvantage(advantages: Float32Array, mask: ArrayLike<number>): number | undefined {
  let first: number | undefined;
  for (let i = 0; i < advantages.length; i++) {
    if (!mask[i]) continue;
    if (first === undefined) first = advantages[i];
    else if (Math.abs(advantages[i] - first) > 1e-6) return undefined;
  }
  // A non-finite advantage stays in the per-token array (float32 holds it); JSON cannot.
  return first !== undefined && Number.isFinite(first) ? first : undefined;
}
