/** A reward function failed or returned something that is not a finite number; the message names the reward and the row. */
export class RewardError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RewardError';
  }
}

/**
 * A reward that did not return within `rewards.timeoutMs`. Unlike a RewardError it does not fail
 * the run: the trajectory records it (its `rewards.errors`), the reward counts as 0 (an outcome)
 * or as "no opinion" (a process reward), and the batch goes on — as a tool call's timeout does.
 */
export class RewardTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RewardTimeout';
  }
}
