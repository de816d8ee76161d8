/**
 * A reward worker: a thread that evaluates the user's config module — the very code the trainer
 * loaded — and calls its rewards' `score` on request. The rewards here are the module's own
 * objects, made by the same code, so closures over the config behave as on the trainer's thread;
 * a call that never returns can be stopped by terminating this thread (see rewardHost.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { describeThrown } from '../../foundations/tools/runner';
import type { OutcomeReward, ProcessReward } from '../../pipeline/rewards/types';
import { evaluateUserModule } from './loadUserModule';
import type { RewardHostMessage, RewardKind, RewardWorkerData, RewardWorkerMessage } from './rewardWorkerMessages';
import { thrown } from './thrownValue';

const port = parentPort!;
const data = workerData as RewardWorkerData;

type Scorer = (...args: unknown[]) => unknown;

/** The config's rewards by kind and name, as the trainer read them. */
function loadRewards(): Map<string, Scorer> {
  const exports = evaluateUserModule(data.file, data.code);
  const config = (exports['default'] ?? exports['config']) as
    { rewards?: { outcome?: OutcomeReward[]; process?: ProcessReward[] } } | undefined;
  const scorers = new Map<string, Scorer>();
  const missing: string[] = [];
  const find = (kind: RewardKind, names: string[], list: readonly (OutcomeReward | ProcessReward)[] | undefined) => {
    for (const name of names) {
      const reward = Array.isArray(list) ? list.find((r) => r?.name === name) : undefined;
      if (typeof reward?.score === 'function') scorers.set(`${kind}:${name}`, reward.score.bind(reward) as Scorer);
      else missing.push(`${kind} reward "${name}"`);
    }
  };
  find('outcome', data.outcome, config?.rewards?.outcome);
  find('process', data.process, config?.rewards?.process);
  if (missing.length)
    throw new Error(
      `${data.file}: evaluated again in the reward worker, its config has no ${missing.join(', ')}; a config must make the same rewards each time it is loaded, or set rewards.isolation: 'trainer'`,
    );
  return scorers;
}

function post(message: RewardWorkerMessage): void {
  port.postMessage(message);
}

async function serve(scorers: Map<string, Scorer>, message: RewardHostMessage): Promise<void> {
  if (message.type === 'ping') return post({ type: 'pong', id: message.id });
  try {
    const value = await scorers.get(`${message.kind}:${message.name}`)!(...message.args);
    try {
      post({ type: 'value', id: message.id, value });
    } catch (error) {
      // A value that cannot be cloned (a function, say) is not a reward either: said as the trainer would say it.
      throw new TypeError(
        `returned a value that cannot leave the reward worker (${error instanceof Error ? error.message : String(error)}); rewards must be finite numbers`,
        { cause: error },
      );
    }
  } catch (error) {
    post({ type: 'error', id: message.id, error: thrown(error) });
  }
}

try {
  const scorers = loadRewards();
  port.on('message', (message: RewardHostMessage) => void serve(scorers, message));
  post({ type: 'ready' });
} catch (error) {
  post({ type: 'failed', message: error instanceof Error ? error.message : describeThrown(error) });
}
