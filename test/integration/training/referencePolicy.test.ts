/**
 * The KL term's reference policy is the policy as RL starts — the warm start — whether the policy
 * trains LoRA adapters or every weight; REINFORCE++ puts that KL in its reward by default. At the
 * first step the policy that sampled the batch *is* the reference, so the measured KL is zero up to
 * float rounding (the sampling graph and the scoring graph agree to about 1e-8), over a float base
 * or a quantized one (QLoRA).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

describe('the reference policy', () => {
  for (const [name, model] of [
    ['LoRA', "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] } }"],
    ['full fine-tuning', "{ path: 'model', lora: false }"],
    // QLoRA: the sampling graph multiplies in int8, but the KL compares two scorings of one quantized base.
    [
      'LoRA over a 4-bit base',
      "{ path: 'model', lora: { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj'] }, quantize: 'int4' }",
    ],
  ] as const) {
    it(`is the warm start (${name}): REINFORCE++'s default KL in the reward measures 0 at step 1, and more after`, async (t) => {
      const config = fixture.writeConfig(`reference-${name.replace(/\W+/g, '-')}.config.ts`, {
        model,
        algorithm: "{ name: 'reinforce++', groupSize: 2 }",
        steps: '2',
        evaluation: '{ samples: 2 }',
      });
      const runDir = path.join(fixture.dir, 'runs', `reference-${name.replace(/\W+/g, '-')}`);
      const result = await new TrainingRun(await loadConfig(config), { runDir, inProcessDevice: true }).run();
      assert.equal(result.run.status, 'finished', result.run.error?.message);
      const [first, second] = new RunStoreReader(runDir).metrics().records.filter((m) => m.kind === 'train');
      const kl = [first.values['kl/mean'], second.values['kl/mean']];
      t.diagnostic(`kl/mean: step 1 ${kl[0]}, step 2 ${kl[1]}`);
      assert.equal(typeof kl[0], 'number', 'a KL term runs by default');
      assert.ok(
        Math.abs(kl[0] as number) < 2e-6,
        `step 1: mean log π − log π_ref = ${kl[0]} (the warm start against itself)`,
      );
      assert.ok(Math.abs(kl[1] as number) > 1e-4, `step 2: ${kl[1]} (the policy has moved away from it)`);
    });
  }
});
