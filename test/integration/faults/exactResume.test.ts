/**
 * Exact resume in every configuration that can be saved. Each case trains a tiny model straight
 * through, then again with a crash in the middle of a step (after the step's records were
 * written, before its checkpoint, with a torn line left at the end of each file as a kill
 * mid-write leaves it), then resumes the crashed run. The resumed run must record exactly what
 * the uninterrupted one did — every metric, trajectory and evaluation — and end with the same
 * checkpoint, byte for byte.
 *
 * The cases cover each dimension rather than their product: LoRA and full fine-tuning; with and
 * without the SFT warm start; KL in the loss and in the reward; PPO with its critic (several
 * epochs and mini-batches, a critic warm-up); GRPO, Dr. GRPO, RLOO, REINFORCE++ with and without
 * its baseline; a resume from the warm start's own checkpoint (step 0); evaluations between
 * steps that fall right after the checkpoint resumed from.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkpointDirName, type TrainingEvent } from '#trainer/contract/protocol';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { createTrainingFixture, type TrainingFixture } from '../../helpers/trainingFixture';
import { assertSameCheckpoint, assertSameRecords } from '../../helpers/runComparison';

let fixture: TrainingFixture;
before(() => {
  fixture = createTrainingFixture();
});
after(() => fixture.cleanup());

const LORA = "{ path: 'model', lora: { rank: 4, alpha: 8 } }";
const FULL = "{ path: 'model', lora: false }";

interface ResumeCase {
  name: string;
  overrides: Record<string, string>;
  steps: number;
  /** The step during which the first run crashes (its checkpoint is the one before). */
  crashIn: number;
}

const CASES: ResumeCase[] = [
  {
    // The defect of issue 15: the resumed run's KL reference was the model before the warm start.
    name: 'full fine-tuning, SFT warm start, KL in the loss (k3), GRPO',
    overrides: { model: FULL, algorithm: "{ name: 'grpo', groupSize: 4, kl: { coef: 0.5, mode: 'loss' } }" },
    steps: 3,
    crashIn: 2,
  },
  {
    name: 'LoRA, SFT warm start, KL in the reward (k1), RLOO, crash in step 1: resumed from the warm start',
    overrides: {
      model: LORA,
      algorithm: "{ name: 'rloo', groupSize: 4, kl: { coef: 0.2, mode: 'reward', estimator: 'k1' } }",
      sft: "{ data: 'data/sft.jsonl', epochs: 1, lr: 1e-3, batchSize: 8 }",
    },
    steps: 2,
    crashIn: 1,
  },
  {
    name: 'LoRA, PPO with its separate critic (2 epochs × 2 mini-batches, a critic warm-up step), no warm start',
    overrides: {
      model: LORA,
      sft: '',
      algorithm: "{ name: 'ppo', groupSize: 2, epochs: 2, miniBatches: 2 }",
      critic: '{ warmupSteps: 1 }',
      optimization: '{ lr: 1e-3, microBatchSize: 4 }',
    },
    steps: 3,
    crashIn: 3,
  },
  {
    name: 'full fine-tuning, REINFORCE++ with baseline, KL in the reward (k2), no warm start, evaluation every 2 steps, checkpoint every 2',
    overrides: {
      model: FULL,
      sft: '',
      algorithm: "{ name: 'reinforce++-baseline', groupSize: 2, kl: { coef: 0.1, mode: 'reward', estimator: 'k2' } }",
      evaluation: '{ samples: 2, every: 2 }',
      output: "{ runsDir: 'runs', checkpointEvery: 2, keepCheckpoints: 1 }",
    },
    steps: 4,
    crashIn: 4,
  },
  {
    name: 'LoRA, SFT warm start, REINFORCE++ and then Dr. GRPO (no KL), cosine schedule',
    overrides: {
      model: LORA,
      algorithm: "{ name: 'reinforce++', groupSize: 2 }",
      optimization: "{ lr: 1e-3, microBatchSize: 8, schedule: 'cosine', warmupSteps: 1 }",
    },
    steps: 3,
    crashIn: 2,
  },
  {
    name: 'full fine-tuning, Dr. GRPO with a clipped, entropy-regularised loss',
    overrides: {
      model: FULL,
      sft: '',
      algorithm:
        "{ name: 'grpo', groupSize: 2, scaleByStd: false, entropyCoef: 0.01, dualClip: 3, aggregation: 'seq-mean-token-mean' }",
    },
    steps: 2,
    crashIn: 2,
  },
];

class SimulatedCrash extends Error {}

async function train(configFile: string, options: ConstructorParameters<typeof TrainingRun>[1]) {
  return new TrainingRun(await loadConfig(configFile), {
    inProcessDevice: true,
    log: () => undefined,
    ...options,
  }).run();
}

/** Leave what a kill in the middle of a write leaves: a last line without its end. */
function tearLastLines(runDir: string, step: number): void {
  fs.appendFileSync(path.join(runDir, 'metrics.jsonl'), '{"step":' + step + ',"time":"2026-');
  fs.appendFileSync(
    path.join(runDir, 'rollouts', `step-${String(step).padStart(6, '0')}.jsonl`),
    '{"step":' + step + ',"index":99,"rowId":"tr',
  );
}

describe('resume is exact', { timeout: 600_000 }, () => {
  CASES.forEach((c, i) => {
    it(c.name, async () => {
      const config = fixture.writeConfig(`resume-${i}.config.ts`, {
        evaluation: '{ samples: 2 }',
        steps: String(c.steps),
        ...c.overrides,
      });
      const straight = path.join(fixture.dir, 'runs', `resume-${i}-straight`);
      const crashed = path.join(fixture.dir, 'runs', `resume-${i}-crashed`);
      assert.equal((await train(config, { runDir: straight })).run.status, 'finished');

      // The crash: once the step's metrics are written, before its checkpoint.
      const crash = (event: TrainingEvent) => {
        if (event.type === 'metrics' && event.record.kind === 'train' && event.record.step === c.crashIn)
          throw new SimulatedCrash(`crash in step ${c.crashIn}`);
      };
      await assert.rejects(train(config, { runDir: crashed, events: crash }), SimulatedCrash);
      tearLastLines(crashed, c.crashIn);
      const left = new RunStoreReader(crashed);
      assert.ok((left.run().lastStep ?? 0) < c.crashIn, 'the crashed step is not complete');

      const logs: string[] = [];
      const resumed = await train(config, { resume: crashed, log: (line) => logs.push(line) });
      assert.equal(resumed.run.status, 'finished');
      assert.match(logs.join('\n'), /resuming resume-\d-crashed after step \d+ from checkpoints\/step-\d{6}/);
      assertSameRecords(straight, crashed, c.name);
      const last = checkpointDirName(c.steps);
      assertSameCheckpoint(path.join(straight, last), path.join(crashed, last), c.name);
      assert.deepEqual(
        new RunStoreReader(crashed).checkpoints(),
        new RunStoreReader(straight).checkpoints(),
        'the same checkpoints are kept',
      );
    });
  });
});
