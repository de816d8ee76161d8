/** The records of a pretraining run's metrics.jsonl: one per optimizer step, one per held-out evaluation. */
export interface TrainMetrics {
  kind: 'train';
  step: number;
  loss: number;
  grad_norm: number;
  lr: number;
  tokens: number;
  scored_tokens: number;
  seconds: number;
  wall_seconds: number;
  tokens_per_second: number;
}

export interface HeldoutMetrics {
  kind: 'heldout';
  step: number;
  loss: number;
  target_loss: number;
  text_loss: number;
  exact_match: Record<string, number>;
  /** Per skill: the share of target tokens that are the greedy choice (absent in runs before 2026-12-03). */
  token_accuracy?: Record<string, number>;
  /** Per skill: nats per target token. */
  target_loss_by_skill?: Record<string, number>;
  wall_seconds: number;
}
