/**
 * The learning rate at an optimizer step: linear warm-up from 0, then constant, linear decay or
 * cosine decay to `minLrRatio · lr` at `totalSteps`.
 */
export interface ScheduleConfig {
  lr: number;
  warmupSteps: number;
  schedule: 'constant' | 'linear' | 'cosine';
  minLrRatio: number;
}

export function learningRate(config: ScheduleConfig, step: number, totalSteps: number): number {
  if (config.warmupSteps > 0 && step < config.warmupSteps) return (config.lr * (step + 1)) / config.warmupSteps;
  if (config.schedule === 'constant') return config.lr;
  const span = Math.max(1, totalSteps - config.warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - config.warmupSteps) / span));
  const floor = config.lr * config.minLrRatio;
  if (config.schedule === 'linear') return floor + (config.lr - floor) * (1 - progress);
  return floor + (config.lr - floor) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

/**
 * The rates of one RL step's optimizer steps. An RL schedule counts optimizer steps, not RL steps
 * (as OpenRLHF's scheduler does; a warm-up of 3 is 3 optimizer steps): each RL step plans
 * `perStep` = epochs × mini-batches of them, so the k-th optimizer step of RL step s (1-based) is
 * number (s − 1)·perStep + k of totalSteps·perStep. An update over fewer sequences than
 * mini-batches takes fewer steps; their slots pass unused, so every RL step starts where the
 * schedule says — a pure function of the step number, which a resumed run continues exactly.
 */
export function optimizerStepRates(
  config: ScheduleConfig,
  step: number,
  totalSteps: number,
  perStep: number,
): (k: number) => number {
  if (!Number.isInteger(perStep) || perStep < 1)
    throw new RangeError(`optimizer steps per RL step must be a positive integer, got ${perStep}`);
  return (k) => {
    if (!Number.isInteger(k) || k < 0 || k >= perStep)
      throw new RangeError(`optimizer step ${k} of an RL step that plans ${perStep} (epochs × mini-batches)`);
    return learningRate(config, (step - 1) * perStep + k, totalSteps * perStep);
  };
}
