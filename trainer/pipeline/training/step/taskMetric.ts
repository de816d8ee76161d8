import { scoreKey } from '../../../contract/protocol/runStore';
import type { TrainingConfig } from '../config/trainingConfig';

export { scoreKey };

/**
 * The task metric: the one number a run is judged by — the mean of one outcome reward over the
 * batch (training) or the held-out rows (evaluation), recorded as `score/<name>`. A config names
 * it with `metric`; by default it is the first outcome reward. `train`, `eval`, the status bar
 * and the panels report it by that name.
 */
export function taskMetric(config: Pick<TrainingConfig, 'metric' | 'rewards'>): string | undefined {
  return config.metric ?? config.rewards.outcome[0]?.name;
}

/** "numeric_match 0.850": how progress lines and summaries show it. */
export function formatScore(metric: string, value: number): string {
  return `${metric} ${value.toFixed(3)}`;
}
