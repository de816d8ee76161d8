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
