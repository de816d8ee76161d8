/**
 * The `agent-r1` normalisation of process rewards, made safe to use.
 *
 * Agent-R1 (agent_r1/src/agent_ray_trainer.py, `prime_norm`, after PRIME) divides the batch's
 * per-call rewards by the batch's largest absolute process reward-to-go,
 *   m = max over trajectories i and tokens t of |Σ_{calls j at or after t} p_ij|,
 * so that no trajectory's process return exceeds 1 in magnitude and the outcome reward keeps its
 * weight however many calls a trajectory makes. Taken literally that also scales *up* (a batch
 * whose only process reward is a 0.05 penalty turns it into −1) and the scale jumps from batch to
 * batch with whatever the batch happened to contain. Here:
 *
 *   M_1 = m_1,   M_k = μ·M_{k−1} + (1 − μ)·m_k        (an exponential moving average, μ = momentum)
 *   scale_k = w / max(1, M_k)                            (w = rewards.processWeight)
 *
 * so the scale is never above w (nothing is amplified), moves by at most a fraction (1 − μ) of the
 * change per batch, and a batch without any process reward (m = 0) leaves M as it was (it has
 * nothing to measure). The state (M and the batches counted) is saved with each checkpoint, so a
 * resumed run continues with the statistic it stopped with.
 */
export interface ProcessNormalizerState {
  /** The running magnitude M (0 before the first batch with a process reward). */
  magnitude: number;
  /** Batches with a process reward seen so far. */
  batches: number;
}

export const DEFAULT_PROCESS_NORM_MOMENTUM = 0.9;

export class ProcessRewardNormalizer {
  private magnitude: number;
  private batches: number;

  constructor(
    readonly momentum = DEFAULT_PROCESS_NORM_MOMENTUM,
    state: ProcessNormalizerState = { magnitude: 0, batches: 0 },
  ) {
    if (!(momentum >= 0 && momentum < 1)) throw new RangeError(`momentum must be in [0, 1), got ${momentum}`);
    this.magnitude = state.magnitude;
    this.batches = state.batches;
  }

  /** Take in a batch's largest absolute process reward-to-go; returns the divisor max(1, M) for that batch. */
  observe(batchMaximum: number): number {
    if (!Number.isFinite(batchMaximum) || batchMaximum < 0)
      throw new RangeError(`a batch's largest |process reward-to-go| must be a finite number ≥ 0, got ${batchMaximum}`);
    if (batchMaximum > 0) {
      this.magnitude =
        this.batches === 0 ? batchMaximum : this.momentum * this.magnitude + (1 - this.momentum) * batchMaximum;
      this.batches++;
    }
    return Math.max(1, this.magnitude);
  }

  /** The running magnitude M after the last batch. */
  get runningMagnitude(): number {
    return this.magnitude;
  }

  state(): ProcessNormalizerState {
    return { magnitude: this.magnitude, batches: this.batches };
  }
}
