import * as inspector from 'node:inspector';
import { Worker } from 'node:worker_threads';
import { withoutTrainerFrames } from '../../foundations/tools/runner';
import { RewardError, RewardTimeoutError } from '../../pipeline/rewards/rewardErrors';
import { DEFAULT_REWARD_TIMEOUT_MS, type RewardConfig } from '../../pipeline/rewards/score';
import type { OutcomeReward, ProcessReward } from '../../pipeline/rewards/types';
import type { PlacedRewards } from '../../pipeline/training/config/trainingConfig';
import type { RewardHostMessage, RewardKind, RewardWorkerData, RewardWorkerMessage } from './rewardWorkerMessages';
import { rethrown } from './thrownValue';
import { answersPing, workerEntry } from './workerEntry';

/**
 * Runs a config's rewards in a worker thread (rewardWorker.ts), where a deadline can stop them.
 *
 * On the trainer's thread a reward that never returns (`while (true) {}`, a regular expression
 * backtracking on what the policy wrote) blocks everything: no timer fires, no signal handler
 * runs, so SIGTERM cannot stop the run and the launcher's pipe watchdog cannot end it. Here the
 * trainer's thread only waits: score.ts's deadline records the reward as timed out and the batch
 * goes on, a stop ends scoring at once, and this host frees the worker — at the same deadline it
 * pings it, and one that does not answer within PING_GRACE_MS is terminated (the rewards waiting
 * in it fail as timed out) and the next call starts a fresh worker, which evaluates the module again.
 *
 * What crosses is a structured clone of each call's arguments (the trajectory and its row, or the
 * call and its context), so a reward sees the same values; what does not carry over is live state
 * shared with the trainer's thread (a tool kept there with `isolation: 'trainer'`): such rewards
 * set `rewards.isolation: 'trainer'`. Tools' own `reward` hooks stay with their tools. Under the
 * Node inspector the rewards stay on the trainer's thread, where breakpoints in them hit.
 */

/** How long a worker has to answer a ping once one of its calls ran out of time. */

interface PendingScore {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class RewardHost {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private readonly pending = new Map<number, PendingScore>();
  private readonly pings = new Map<number, () => void>();
  private nextId = 1;
  private closed = false;
  /** Workers started so far (the first, and one after each that was stopped). */
  starts = 0;

  private constructor(
    private readonly data: RewardWorkerData,
    private readonly timeoutMs: number,
  ) {}

  /** Start the worker and wait until it has evaluated the module and found every reward. */
  static async start(data: RewardWorkerData, timeoutMs: number): Promise<RewardHost> {
    const host = new RewardHost(data, timeoutMs);
    await host.ensureWorker();
    return host;
  }

  private ensureWorker(): Promise<Worker> {
    if (this.closed) return Promise.reject(new Error('the reward worker is closed'));
    if (this.worker) return Promise.resolve(this.worker);
    this.starting ??= new Promise<Worker>((resolve, reject) => {
      const entry = workerEntry('reward-worker.js', 'rewardWorker.ts');
      const worker = new Worker(entry.script, { eval: entry.eval, workerData: this.data });
      this.starts++;
      let ready = false;
      worker.on('message', (message: RewardWorkerMessage) => {
        if (ready) return this.receive(message);
        if (message.type === 'ready') {
          ready = true;
          this.worker = worker;
          this.starting = undefined;
          resolve(worker);
        } else if (message.type === 'failed') {
          this.starting = undefined;
          void worker.terminate();
          reject(new RewardError(`the reward worker could not load ${this.data.file}: ${message.message}`));
        }
      });
      // The worker went away by itself (process.exit in a reward, an uncaught error in a stray callback): its calls fail.
      const lost = (reason: string) => {
        if (!ready) {
          this.starting = undefined;
          reject(new RewardError(reason));
        } else if (this.worker === worker) {
          this.worker = undefined;
          this.failPending(() => new Error(reason));
        }
      };
      worker.on('error', (error) =>
        lost(
          `the reward worker of ${this.data.file} failed: ${error instanceof Error ? withoutTrainerFrames(error.stack ?? error.message) : String(error)}`,
        ),
      );
      worker.on('exit', (code) =>
        lost(
          `the reward worker of ${this.data.file} exited (code ${code}): a reward or its module must not end its thread`,
        ),
      );
    });
    return this.starting;
  }

  private failPending(error: () => Error): void {
    for (const call of this.pending.values()) call.reject(error());
    this.pending.clear();
    for (const pong of this.pings.values()) pong();
    this.pings.clear();
  }

  private receive(message: RewardWorkerMessage): void {
    if (message.type === 'pong') {
      this.pings.get(message.id)?.();
      this.pings.delete(message.id);
      return;
    }
    if (message.type !== 'value' && message.type !== 'error') return;
    const call = this.pending.get(message.id);
    if (!call) return;
    this.pending.delete(message.id);
    if (message.type === 'error') call.reject(rethrown(message.error));
    else call.resolve(message.value);
  }

  /** One reward call in the worker; its deadline (score.ts's too) also checks that the worker is not stuck. */
  async score(kind: RewardKind, name: string, args: unknown[]): Promise<unknown> {
    const worker = await this.ensureWorker();
    const id = this.nextId++;
    const result = new Promise<unknown>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    try {
      worker.postMessage({ type: 'score', id, kind, name, args } satisfies RewardHostMessage);
    } catch (error) {
      this.pending.delete(id);
      throw new RewardError(
        `${kind} reward "${name}": its arguments cannot be sent to the reward worker (${(error as Error).message}); set rewards.isolation: 'trainer' to score on the trainer's thread`,
        { cause: error },
      );
    }
    const timer = setTimeout(() => void this.checkResponsive(worker, name), this.timeoutMs);
    try {
      return await result;
    } finally {
      clearTimeout(timer);
    }
  }

  /** After a call ran out of time: a worker that cannot answer a ping is stuck in it and is replaced. */
  private async checkResponsive(worker: Worker, reward: string): Promise<void> {
    const id = this.nextId++;
    const answered = await answersPing(worker, this.pings, id);
    if (answered || this.worker !== worker) return;
    this.worker = undefined;
    const message = `the reward worker was restarted: reward "${reward}" ran past rewards.timeoutMs (${this.timeoutMs} ms) without yielding (a synchronous loop?), which stopped every reward waiting beside it`;
    this.failPending(() => new RewardTimeoutError(message));
    await worker.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failPending(() => new Error('the reward worker was closed'));
    const worker = this.worker ?? (await this.starting?.catch(() => undefined));
    this.worker = undefined;
    await worker?.terminate();
  }
}

/** `reward` with its `score` answered by the worker; everything else (name, weight, what it inherits) is the original's. */
function placed<R extends OutcomeReward | ProcessReward>(reward: R, score: R['score']): R {
  return Object.assign(Object.create(reward) as R, { score });
}

/**
 * The rewards of a config as a run uses them: the outcome and process rewards moved to one reward
 * worker for the module, unless the config keeps them on the trainer's thread
 * (`rewards.isolation: 'trainer'`) or the Node inspector is open (see above).
 */
export async function isolateRewards(file: string, code: string, rewards: RewardConfig): Promise<PlacedRewards> {
  const process = rewards.process ?? [];
  const stay = { rewards, close: async () => undefined };
  if (rewards.isolation === 'trainer' || inspector.url() !== undefined) return stay;
  if (rewards.outcome.length === 0 && process.length === 0) return stay;
  const host = await RewardHost.start(
    { file, code, outcome: rewards.outcome.map((r) => r.name), process: process.map((r) => r.name) },
    rewards.timeoutMs ?? DEFAULT_REWARD_TIMEOUT_MS,
  );
  return {
    rewards: {
      ...rewards,
      outcome: rewards.outcome.map((r) =>
        placed(r, (trajectory, row) => host.score('outcome', r.name, [trajectory, row]) as Promise<number>),
      ),
      ...(rewards.process
        ? {
            process: rewards.process.map((r) =>
              placed(r, (call, ctx) => host.score('process', r.name, [call, ctx]) as Promise<number | undefined>),
            ),
          }
        : {}),
    },
    close: () => host.close(),
  };
}
