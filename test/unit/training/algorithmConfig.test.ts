/**
 * The algorithm and critic sections of a config: what a name alone runs, how a partial override
 * merges with the algorithm's defaults, the critic's own optimizer settings, and the errors that
 * name the field.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { exactMatch } from '#trainer/pipeline/rewards';
import {
  criticOptions,
  lossScaleFactor,
  policyTrainerOptions,
  policyUpdates,
} from '#trainer/pipeline/training/config/configOptions';
import { parseConfig } from '#trainer/pipeline/training/config/trainingConfig';

const parse = (extra: Record<string, unknown>) =>
  parseConfig(
    {
      model: { path: 'model', lora: false },
      data: { train: 'train.jsonl' },
      rewards: { outcome: [exactMatch()] },
      steps: 10,
      optimization: { maxGradNorm: 0.5, lr: 3e-4 },
      ...extra,
    },
    'a.config.ts',
  );

describe('algorithm defaults and the critic in a config', () => {
  it('a partial KL setting keeps the algorithm’s own mode and estimator', () => {
    assert.deepEqual(parse({ algorithm: { name: 'grpo', kl: { coef: 0.05 } } }).algorithm.kl, {
      coef: 0.05,
      estimator: 'k3',
      mode: 'loss',
    });
    assert.deepEqual(parse({ algorithm: { name: 'rloo', kl: { coef: 0 } } }).algorithm.kl, {
      coef: 0,
      estimator: 'k1',
      mode: 'reward',
    });
    assert.equal(
      parse({ algorithm: { name: 'ppo', clipHigh: 0.28 } }).algorithm.clipHigh,
      0.28,
      'a value the config sets wins',
    );
  });

  it("Dr. GRPO's constant: the most tokens a trajectory can generate, or the config's", () => {
    const budget = { maxTurns: 3, maxNewTokensPerTurn: 100, maxTotalTokens: 250, maxToolResultTokens: 50 };
    assert.equal(lossScaleFactor(parse({ algorithm: { name: 'dr-grpo' }, rollout: { budget } })), 250);
    assert.equal(lossScaleFactor(parse({ algorithm: { name: 'dr-grpo', lossScaleFactor: 64 } })), 64);
    assert.equal(
      policyTrainerOptions(parse({ algorithm: { name: 'dr-grpo' }, rollout: { budget } })).policy.lossScaleFactor,
      250,
    );
    assert.equal(lossScaleFactor(parse({ algorithm: { name: 'grpo' } })), undefined);
  });

  // Defect 1 of issue 16: the critic was the policy, and shared its gradient clipping.
  it("PPO's critic is separate by default, with its own learning rate, weight decay and clipping", () => {
    const c = parse({ algorithm: { name: 'ppo' }, critic: { warmupSteps: 2 } });
    assert.equal(policyTrainerOptions(c).value, undefined, 'no value head on the policy');
    const critic = criticOptions(c, (p) => `/abs/${p}`);
    assert.equal(critic.adamw.maxGradNorm, 1, 'critic.optim.clip_grad, not optimization.maxGradNorm (0.5)');
    assert.equal(critic.adamw.weightDecay, 0.01);
    assert.equal(c.critic!.lr, 1e-5);
    assert.equal(critic.value.clip, 0.5);
    assert.equal(critic.lora, undefined, 'trains every weight, as the policy does');
    assert.deepEqual(
      [1, 2, 3].map((s) => policyUpdates(c, s)),
      [false, false, true],
      'the policy sits out the warm-up',
    );
    const named = criticOptions(
      parse({ algorithm: { name: 'ppo' }, critic: { model: 'critic-model' } }),
      (p) => `/abs/${p}`,
    );
    assert.equal(named.modelDir, '/abs/critic-model');
    const shared = parse({ algorithm: { name: 'ppo' }, critic: { network: 'shared' } });
    assert.deepEqual(policyTrainerOptions(shared).value, { coef: 0.5, clip: 0.5, aggregation: 'token-mean' });
  });

  it('RFT: the likelihood surrogate, no KL, token-mean, threshold 1 unless set; the threshold only on RFT, and in the hash only there', () => {
    const rft = parse({ algorithm: { name: 'rft' } });
    assert.equal(rft.algorithm.rftThreshold, 1);
    assert.deepEqual(rft.algorithm.kl, { coef: 0, estimator: 'k3', mode: 'loss' });
    assert.equal(rft.algorithm.aggregation, 'token-mean');
    const options = policyTrainerOptions(rft);
    assert.equal(options.policy.surrogate, 'log-likelihood');
    assert.equal(options.policy.klCoef, 0);
    assert.equal(options.reference, false, 'no reference policy kept without a KL term');
    assert.equal(parse({ algorithm: { name: 'rft', rftThreshold: 0.5 } }).algorithm.rftThreshold, 0.5);
    assert.equal(
      policyTrainerOptions(parse({ algorithm: { name: 'grpo' } })).policy.surrogate,
      undefined,
      'GRPO keeps the clipped ratio',
    );
    assert.ok(
      !('rftThreshold' in parse({ algorithm: { name: 'grpo' } }).algorithm),
      'another algorithm hashes as before RFT existed',
    );
  });

  it('refuses what cannot work, naming the field', () => {
    const refused = (extra: Record<string, unknown>, message: RegExp) =>
      assert.throws(
        () => parse(extra),
        (e: Error) => message.test(e.message),
      );
    refused(
      { algorithm: { name: 'ppo', criticWarmupSteps: 2 } },
      /^a\.config\.ts: algorithm\.criticWarmupSteps has moved to critic\.warmupSteps$/,
    );
    refused({ algorithm: { name: 'ppo', valueClip: 0.2 } }, /algorithm\.valueClip has moved to critic\.valueClip/);
    refused(
      { algorithm: { name: 'grpo' }, critic: {} },
      /^a\.config\.ts: critic: only PPO trains a critic \(algorithm\.name is grpo\)$/,
    );
    refused(
      { algorithm: { name: 'dr-grpo', scaleByStd: true } },
      /algorithm\.scaleByStd: Dr\. GRPO does not divide by the group's standard deviation/,
    );
    refused(
      { algorithm: { name: 'dr-grpo', groupSize: 1 } },
      /algorithm\.groupSize: dr-grpo compares samples within a group; expected at least 2, got 1/,
    );
    refused(
      { algorithm: { name: 'ppo' }, critic: { lora: { rank: 4 } } },
      /critic\.lora: adapters on a critic that starts from a fully fine-tuned policy/,
    );
    refused(
      { model: { path: 'model', lora: { rank: 8 } }, algorithm: { name: 'ppo' }, critic: { lora: { rank: 4 } } },
      /critic\.lora: to start from the policy, the critic's adapters take over the policy's/,
    );
    refused(
      { algorithm: { name: 'ppo' }, critic: { network: 'shared', model: 'x' } },
      /critic\.model: a shared-trunk critic is the policy's network/,
    );
    refused(
      { algorithm: { name: 'grpo', rftThreshold: 1 } },
      /algorithm\.rftThreshold: only RFT \(name: 'rft'\) filters by a threshold, and name is 'grpo'/,
    );
    refused(
      { algorithm: { name: 'rft', kl: { coef: 0.01, mode: 'reward' } } },
      /algorithm\.kl\.mode: RFT keeps trajectories by their outcome reward alone/,
    );
    refused({ algorithm: { name: 'rft', rftThreshold: Number.NaN } }, /algorithm\.rftThreshold/);
  });
});
