/**
 * Our settings as verl's Hydra keys: every key any config can produce exists in verl's config
 * (test/fixtures/verl/ppo_trainer_keys.txt, from verl's repository at the commit it names), values
 * are translated where the names differ, and what verl cannot express is listed with a reason.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TrainingConfigSchema, type TrainingConfigInput } from '#trainer/pipeline/training/config/trainingConfig';
import { CodeBlockFormat } from '#trainer/pipeline/rollout/formats/codeBlock';
import { hydraValue, mapSettings, shellOverride } from '#trainer/bridges/verl/verlSettings';

const KEYS = new Set(
  fs
    .readFileSync(path.resolve(__dirname, '../../fixtures/verl/ppo_trainer_keys.txt'), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#')),
);

function config(overrides: Partial<TrainingConfigInput>) {
  return TrainingConfigSchema.parse({
    model: { path: 'm' },
    data: { train: 't.jsonl' },
    rewards: { outcome: [] },
    algorithm: { name: 'grpo' },
    steps: 5,
    ...overrides,
  });
}

describe('verl settings', () => {
  const variants = {
    grpo: config({}),
    ppo: config({
      algorithm: {
        name: 'ppo',
        dualClip: 3,
        kl: { coef: 0.01, estimator: 'k1', mode: 'reward' },
        lossMask: 'response',
      },
      critic: { warmupSteps: 2, lr: 2e-5 },
      model: { path: 'm', lora: false },
      optimization: { schedule: 'linear' },
      evaluation: { every: 5, samples: 3, temperature: 0.5 },
    }),
    sharedCritic: config({ algorithm: { name: 'ppo' }, critic: { network: 'shared' } }),
    drGrpo: config({ algorithm: { name: 'dr-grpo' } }),
    rloo: config({
      algorithm: { name: 'rloo', kl: { coef: 0.1, estimator: 'k2', mode: 'loss' } },
      rollout: { format: new CodeBlockFormat(), templateKwargs: { enable_thinking: false, x: 'y' }, systemPrompt: 'S' },
      sft: { data: 'sft.jsonl' },
    }),
    reinforce: config({
      algorithm: { name: 'reinforce++-baseline', aggregation: 'seq-mean-token-mean' },
      rewards: { outcome: [], combine: 'agent-r1' },
    }),
  };

  it('produces only keys verl has', () => {
    for (const [name, c] of Object.entries(variants)) {
      const unknown = mapSettings(c)
        .mapped.map((m) => m.key)
        .filter((k) => k !== '(dataset)' && !KEYS.has(k));
      assert.deepEqual(unknown, [], name);
    }
  });

  it('translates names and values where verl spells them differently', () => {
    const value = (c: (typeof variants)[keyof typeof variants], key: string) =>
      mapSettings(c)
        .mapped.filter((m) => m.key === key)
        .map((m) => m.value);
    assert.deepEqual(value(variants.ppo, 'algorithm.adv_estimator'), ['gae']);
    assert.deepEqual(value(variants.reinforce, 'algorithm.adv_estimator'), ['reinforce_plus_plus_baseline']);
    assert.deepEqual(value(variants.drGrpo, 'algorithm.adv_estimator'), ['grpo']);
    assert.deepEqual(value(variants.drGrpo, 'algorithm.norm_adv_by_std_in_grpo'), [false]);
    assert.deepEqual(value(variants.drGrpo, 'actor_rollout_ref.actor.loss_agg_mode'), ['seq-mean-token-sum-norm']);
    assert.deepEqual(
      value(variants.drGrpo, 'actor_rollout_ref.actor.loss_scale_factor'),
      [4 * 256],
      'maxTurns × maxNewTokensPerTurn of the default budget',
    );
    assert.deepEqual(value(variants.drGrpo, 'actor_rollout_ref.actor.use_kl_loss'), [false]);
    assert.deepEqual(value(variants.ppo, 'critic.optim.lr'), [2e-5]);
    assert.deepEqual(value(variants.ppo, 'critic.cliprange_value'), [0.5]);
    assert.deepEqual(value(variants.ppo, 'trainer.critic_warmup'), [2]);
    assert.deepEqual(value(variants.ppo, 'critic.model.lora_rank'), [0]);
    assert.deepEqual(value(variants.sharedCritic, 'critic.model.lora_rank'), [16]);
    assert.deepEqual(value(variants.ppo, 'algorithm.kl_penalty'), ['kl']);
    assert.deepEqual(value(variants.ppo, 'algorithm.use_kl_in_reward'), [true]);
    assert.deepEqual(value(variants.ppo, 'actor_rollout_ref.actor.use_kl_loss'), [false]);
    assert.deepEqual(value(variants.rloo, 'actor_rollout_ref.actor.kl_loss_type'), ['mse']);
    assert.deepEqual(value(variants.grpo, 'actor_rollout_ref.actor.kl_loss_type'), ['low_var_kl']);
    assert.deepEqual(value(variants.grpo, 'actor_rollout_ref.rollout.top_k'), [-1]);
    assert.deepEqual(value(variants.grpo, 'actor_rollout_ref.model.lora_rank'), [16]);
    assert.deepEqual(value(variants.ppo, 'actor_rollout_ref.model.lora_rank'), []);
    assert.deepEqual(value(variants.ppo, 'trainer.test_freq'), [5]);
    assert.deepEqual(value(variants.grpo, 'trainer.test_freq'), [-1]);
    assert.deepEqual(value(variants.rloo, 'data.apply_chat_template_kwargs'), ['{enable_thinking:false,x:"y"}']);
    assert.equal(hydraValue([0.9, 0.999]), '[0.9,0.999]');
    assert.equal(
      shellOverride('data.apply_chat_template_kwargs', '{enable_thinking:false}'),
      "'data.apply_chat_template_kwargs={enable_thinking:false}'",
    );
    assert.equal(shellOverride('actor_rollout_ref.actor.optim.lr', 1e-6), 'actor_rollout_ref.actor.optim.lr=0.000001');
  });

  it('lists what verl cannot express, each with its reason', () => {
    const unmapped = (c: (typeof variants)[keyof typeof variants]) => mapSettings(c).unmapped.map((u) => u.setting);
    assert.ok(unmapped(variants.sharedCritic).includes('critic.network'));
    assert.ok(unmapped(variants.ppo).includes('critic.model'));
    assert.ok(unmapped(variants.ppo).includes('algorithm.lossMask'));
    assert.ok(unmapped(variants.ppo).includes('optimization.schedule'));
    assert.ok(unmapped(variants.ppo).includes('evaluation.samples'));
    assert.ok(unmapped(variants.rloo).includes('rollout.format'));
    assert.ok(unmapped(variants.rloo).includes('sft'));
    assert.ok(unmapped(variants.reinforce).includes('rewards.combine'));
    assert.ok(!unmapped(variants.grpo).includes('sft'));
    for (const c of Object.values(variants))
      for (const u of mapSettings(c).unmapped) assert.ok(u.why.length > 20, u.setting);
  });

  it('refuses RFT, which verl has no estimator for, rather than export another algorithm under its name', () => {
    assert.throws(
      () => mapSettings(config({ algorithm: { name: 'rft' } })),
      /algorithm\.name: verl's PPO trainer has no rejection-sampling fine-tuning \(rft\)/,
    );
  });
});
