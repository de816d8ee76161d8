/**
 * PPO's critic on a tiny real model. The default critic is a network of its own (as verl and
 * Agent-R1 run it): its warm-up leaves the policy bit for bit unchanged, it starts as the policy
 * stands when RL starts (adapters copied, or merged into a full copy), and a resumed run continues
 * exactly — critic, reference policy and all. The shared-trunk critic stays as an option.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { loraModules, loraScale, loraTensorNames } from '#trainer/foundations/models/lora';
import { loadModelConfig } from '#trainer/foundations/models/modelConfig';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

async function train(configFile: string, options: ConstructorParameters<typeof TrainingRun>[1]) {
  const result = await new TrainingRun(await loadConfig(configFile), { inProcessDevice: true, ...options }).run();
  assert.equal(result.run.status, 'finished', result.run.error?.message);
  return result;
}

/** Every tensor of a safetensors file in a checkpoint folder. */
function tensors(dir: string, file = 'model.safetensors'): Map<string, Float32Array> {
  const reader = CheckpointReader.open(dir, file);
  try {
    return new Map(reader.names().map((n) => [n, reader.read(n)]));
  } finally {
    reader.close();
  }
}

const checkpoint = (runDir: string, step: number) =>
  path.join(runDir, 'checkpoints', `step-${String(step).padStart(6, '0')}`);
const LORA = "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } }";
const QLORA = "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] }, quantize: 'int4' }";
const PPO = "{ name: 'ppo', groupSize: 2 }";

describe("PPO's critic", () => {
  it('a separate critic: its warm-up leaves every policy weight and moment bit for bit unchanged, and trains the critic', async () => {
    // Full fine-tuning of the policy and the critic: every policy weight could move.
    const config = fixture.writeConfig('warmup.config.ts', {
      algorithm: PPO,
      critic: '{ warmupSteps: 1 }',
      sft: '',
      steps: '2',
      evaluation: '{ samples: 2 }',
    });
    const runDir = path.join(fixture.dir, 'runs', 'warmup');
    await train(config, { runDir });
    const [before, warmedUp, trained] = [0, 1, 2].map((s) => tensors(checkpoint(runDir, s)));
    assert.ok(before.size > 10);
    for (const [name, data] of before)
      assert.deepEqual(warmedUp.get(name), data, `${name} moved during the critic's warm-up`);
    const moments = [0, 1].map((s) => tensors(checkpoint(runDir, s), 'optimizer.safetensors'));
    for (const [name, data] of moments[0])
      assert.deepEqual(moments[1].get(name), data, `policy optimizer state ${name} changed during the warm-up`);
    const state = (s: number) =>
      JSON.parse(fs.readFileSync(path.join(checkpoint(runDir, s), 'trainer_state.json'), 'utf8'));
    assert.equal(state(1).optimizerSteps, state(0).optimizerSteps, "the policy's AdamW took no step");
    // The critic did train, with its own optimizer.
    const critic = [0, 1].map((s) => tensors(path.join(checkpoint(runDir, s), 'critic'), 'optimizer.safetensors'));
    const moved = [...critic[0]].filter(
      ([name, data]) =>
        !name.endsWith('.m') && !name.endsWith('.v') && critic[1].get(name)!.some((x, i) => x !== data[i]),
    );
    assert.ok(moved.length > 10, `${moved.length} critic tensors moved`);
    assert.ok(
      [...critic[0].keys()].every((n) => n.startsWith('critic/')),
      'the critic lives under critic/…',
    );
    // After the warm-up, the policy trains.
    assert.ok(
      [...before].some(([name, data]) => trained.get(name)!.some((x, i) => x !== data[i])),
      'the policy moved at step 2',
    );
    const metrics = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
    assert.equal(metrics[0].values['loss/policy'], undefined, 'no policy loss during the warm-up');
    assert.equal(typeof metrics[0].values['loss/value'], 'number');
    assert.equal(typeof metrics[1].values['loss/policy'], 'number');
    assert.equal(typeof metrics[1].values['critic/grad_norm'], 'number');
  });

  it('starts from the warm-started policy: LoRA adapters copied onto the shared base, or merged into a full copy', async () => {
    const adapters = fixture.writeConfig('lora-critic.config.ts', {
      model: LORA,
      algorithm: PPO,
      steps: '1',
      evaluation: '{ samples: 2 }',
    });
    const full = fixture.writeConfig('full-critic.config.ts', {
      model: LORA,
      algorithm: PPO,
      critic: '{ lora: false }',
      steps: '1',
      evaluation: '{ samples: 2 }',
    });
    const adapterRun = path.join(fixture.dir, 'runs', 'lora-critic');
    const fullRun = path.join(fixture.dir, 'runs', 'full-critic');
    await train(adapters, { runDir: adapterRun });
    await train(full, { runDir: fullRun });
    for (const runDir of [adapterRun, fullRun]) {
      const policy = tensors(checkpoint(runDir, 0), 'adapter_model.safetensors');
      const critic = tensors(path.join(checkpoint(runDir, 0), 'critic'), 'optimizer.safetensors');
      assert.ok(
        [...policy.values()].some((t) => t.some((x) => x !== 0)),
        'the warm start trained the adapters (B ≠ 0)',
      );
      if (runDir === adapterRun) {
        for (const [name, data] of policy)
          assert.deepEqual(critic.get(`critic/${name}`), data, `the critic's ${name} starts as the policy's`);
        assert.ok(
          ![...critic.keys()].some((n) => n.endsWith('q_proj.weight') && !n.includes('lora')),
          'the frozen base is shared, not copied',
        );
        continue;
      }
      // W + (alpha/rank)·B·A, by hand, against the critic's starting weight.
      const config = loadModelConfig(path.join(fixture.dir, 'model'));
      const base = tensors(path.join(fixture.dir, 'model'));
      const lora = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj'] as ('q_proj' | 'v_proj')[] };
      for (const m of loraModules(config, lora)) {
        const names = loraTensorNames(m.module);
        const [a, b, w] = [policy.get(names.a)!, policy.get(names.b)!, base.get(`${m.module}.weight`)!];
        const got = critic.get(`critic/${m.module}.weight`)!;
        for (let o = 0; o < m.outFeatures; o++) {
          for (let i = 0; i < m.inFeatures; i++) {
            let delta = 0;
            for (let k = 0; k < lora.rank; k++) delta += b[o * lora.rank + k] * a[k * m.inFeatures + i];
            const want = w[o * m.inFeatures + i] + loraScale(lora) * delta;
            assert.ok(
              Math.abs(got[o * m.inFeatures + i] - want) < 1e-6,
              `${m.module}[${o}, ${i}]: ${got[o * m.inFeatures + i]} vs ${want}`,
            );
          }
        }
      }
    }
  });

  it("starts from a named model folder (critic.model): the folder's weights, not the warm-started policy's", async () => {
    const config = fixture.writeConfig('named-critic.config.ts', {
      algorithm: PPO,
      critic: "{ model: 'model' }",
      steps: '1',
      evaluation: '{ samples: 2 }',
    });
    const runDir = path.join(fixture.dir, 'runs', 'named-critic');
    await train(config, { runDir });
    const folder = tensors(path.join(fixture.dir, 'model'));
    const policy = tensors(checkpoint(runDir, 0));
    const critic = tensors(path.join(checkpoint(runDir, 0), 'critic'), 'optimizer.safetensors');
    let moved = 0;
    for (const [name, data] of folder) {
      assert.deepEqual(critic.get(`critic/${name}`), data, `the critic's ${name} is the folder's`);
      if (policy.get(name)!.some((x, i) => x !== data[i])) moved++;
    }
    assert.ok(moved > 10, `the warm start moved the policy away from the folder (${moved} tensors)`);
  });

  for (const [base, model] of [
    ['a float base', LORA],
    ['a 4-bit base (QLoRA)', QLORA],
  ] as const)
    it(`resumed after step 2, steps 3 and 4 equal the uninterrupted run exactly (LoRA policy and critic over ${base}, warm start, KL in the reward)`, async () => {
      const name = base === 'a float base' ? 'ppo' : 'ppo-qlora';
      const config = fixture.writeConfig(`${name}-resume.config.ts`, {
        model,
        algorithm: "{ name: 'ppo', groupSize: 2, kl: { coef: 0.01 } }",
        critic: '{ lr: 1e-3 }',
        steps: '4',
        evaluation: '{ samples: 2 }',
      });
      const straight = path.join(fixture.dir, 'runs', `${name}-straight`);
      const interrupted = path.join(fixture.dir, 'runs', `${name}-interrupted`);
      await train(config, { runDir: straight });
      await train(config, { runDir: interrupted, steps: 2 });
      await train(config, { resume: interrupted, steps: 4 });
      assert.ok(
        fs.existsSync(path.join(checkpoint(interrupted, 2), 'reference.safetensors')),
        'the reference policy (the warm start) is in the checkpoint',
      );
      assert.equal(
        fs.existsSync(path.join(checkpoint(interrupted, 2), 'base_quantization.json')),
        model === QLORA,
        'a QLoRA checkpoint says how its base was quantized',
      );
      const pick = (dir: string) => new RunStoreReader(dir).metrics().records.filter((m) => m.kind === 'train');
      for (const step of [3, 4]) {
        const x = pick(straight).find((m) => m.step === step)!.values;
        const y = pick(interrupted).find((m) => m.step === step)!.values;
        for (const key of [
          'reward/mean',
          'loss/total',
          'loss/policy',
          'loss/value',
          'grad/norm',
          'critic/grad_norm',
          'kl/mean',
        ]) {
          assert.equal(typeof x[key], 'number', `step ${step} ${key} recorded`);
          assert.equal(y[key], x[key], `step ${step} ${key}`);
        }
      }
      for (const file of [
        'adapter_model.safetensors',
        'optimizer.safetensors',
        'critic/optimizer.safetensors',
        'reference.safetensors',
      ]) {
        const a = tensors(checkpoint(straight, 4), file);
        const b = tensors(checkpoint(interrupted, 4), file);
        for (const [name, data] of a) assert.deepEqual(b.get(name), data, `${file}: ${name}`);
      }
    });

  it('a shared-trunk critic (critic.network "shared") trains a value head on the policy; it cannot warm up', async () => {
    const config = fixture.writeConfig('shared.config.ts', {
      algorithm: PPO,
      critic: "{ network: 'shared' }",
      sft: '',
      steps: '1',
      evaluation: '{ samples: 2 }',
    });
    const runDir = path.join(fixture.dir, 'runs', 'shared');
    // (Without the evaluation before RL, as bench:rl runs its variants.)
    await train(config, { runDir, evaluateBefore: false });
    assert.deepEqual(new RunStoreReader(runDir).evaluations(), [1]);
    assert.ok(fs.existsSync(path.join(checkpoint(runDir, 1), 'value_head.safetensors')));
    assert.ok(!fs.existsSync(path.join(checkpoint(runDir, 1), 'critic')));
    const [metrics] = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
    assert.equal(typeof metrics.values['loss/value'], 'number');
    const refused = fixture.writeConfig('shared-warmup.config.ts', {
      algorithm: PPO,
      critic: "{ network: 'shared', warmupSteps: 2 }",
      sft: '',
    });
    await assert.rejects(
      loadConfig(refused),
      /critic\.warmupSteps: a shared-trunk critic's warm-up would move the policy's weights/,
    );
  });
});
