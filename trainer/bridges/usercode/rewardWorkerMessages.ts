import type { ThrownValue } from './toolWorkerMessages';
/**
 * What the trainer (rewardHost.ts) and a reward worker (rewardWorker.ts) say to each other. Both
 * ends are this build's own code, in one process; values cross as structured clones.
 */

/** An outcome reward is called as `score(trajectory, row)`, a process reward as `score(call, { row, trajectory })`. */
export type RewardKind = 'outcome' | 'process';

export type RewardHostMessage =
  { type: 'score'; id: number; kind: RewardKind; name: string; args: unknown[] } | { type: 'ping'; id: number };

export type RewardWorkerMessage =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'value'; id: number; value: unknown }
  | { type: 'error'; id: number; error: ThrownValue }
  | { type: 'pong'; id: number };

export interface RewardWorkerData {
  /** The config file, absolute, and the code the trainer compiled from it. */
  file: string;
  code: string;
  /** The rewards to serve, by name, from the config's `rewards.outcome` and `rewards.process`. */
  outcome: string[];
  process: string[];
}
