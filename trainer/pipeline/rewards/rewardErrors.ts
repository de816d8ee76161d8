/** A reward function failed or returned something that is not a finite number; the message names the reward and the row. */
export class RewardError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RewardError';
  }
}
