/**
 * Rejection-sampling fine-tuning end to end on the tiny agent: a few `algorithm.name: 'rft'`
 * steps through the real trainer (rollouts, rewards, the filter, the update, the run store). The
 * outcome is a format check the warm-started agent passes on some samples and fails on others at
 * a high temperature, so each step keeps part of its batch. Checked: the recorded metrics agree
 * with the trajectories the filter kept, nothing is clipped, and each update raises the
 * log-likelihood of a kept trajectory (the run's own probe, scored after the update, against the
 * log-probs it was sampled with).
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { formatCheck } from '#trainer/pipeline/rewards';
import { RunStoreReader } from '#trainer/contract/runstore';
import { decodeFloat32, decodeUint8 } from '#trainer/contract/protocol/tokens';
import { AlgorithmSection } from '#trainer/pipeline/training/config/trainingConfig';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { TINY_ANSWER, writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';

let dir: string;
let configFile: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rft-'));
  configFile = await writeTinyAgentWorkspace(dir, { steps: 3, promptsPerStep: 2, groupSize: 4 });
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('RFT on the tiny agent', () => {
  it('trains on the trajectories that pass, records the share kept, and raises their log-likelihood', async () => {
    const loaded = await loadConfig(configFile);
    const c = loaded.config;
    c.algorithm = AlgorithmSection.parse({ name: 'rft', groupSize: 4 });
    // Rewards made here, not by the config file: they run on the trainer's thread (the reward
    // worker evaluates the file again and would not find them).
    c.rewards = {
      isolation: 'trainer',
      outcome: [formatCheck({ name: 'answered', test: new RegExp(`<answer>${TINY_ANSWER}</answer>`) })],
    };
    c.rollout.temperature = 1.1;
    c.optimization.lr = 3e-4;
    const runDir = path.join(dir, 'runs', 'rft');
    assert.equal((await new TrainingRun(loaded, { runDir, inProcessDevice: true }).run()).run.status, 'finished');

    const reader = new RunStoreReader(runDir);
    const metrics = reader.metrics().records.filter((m) => m.kind === 'train');
    assert.equal(metrics.length, 3);
    let trainedSteps = 0;
    for (const m of metrics) {
      const records = reader.trajectories(m.step).records;
      const kept = records.filter((r) => r.advantage === 1);
      assert.deepEqual(
        kept,
        records.filter((r) => r.rewards.outcome >= 1),
        `step ${m.step}: kept exactly the trajectories whose outcome reached 1`,
      );
      assert.ok(
        records.every((r) => r.advantage === 0 || r.advantage === 1),
        `step ${m.step}: advantages are 1 (kept) or 0`,
      );
      assert.equal(m.values['rft/kept_fraction'], kept.length / records.length, `step ${m.step}: kept fraction`);
      const maskOf = (r: (typeof records)[number]) => decodeUint8(r.tokens.mask);
      assert.equal(
        m.values['tokens/in_loss'],
        kept.reduce((n, r) => n + maskOf(r).reduce((a, b) => a + b, 0), 0),
        `step ${m.step}: the loss covers the kept trajectories' generated tokens only`,
      );
      if (kept.length === 0) continue;
      trainedSteps++;
      assert.equal(m.values['clip/fraction'], 0, 'no ratio, nothing clipped');
      // The probe is the first kept trajectory, scored by the updated policy; before, it had its sampling log-probs.
      const mask = maskOf(kept[0]);
      const sampled =
        decodeFloat32(kept[0].tokens.logprobs).reduce((a, lp, k) => a + (mask[k] ? lp : 0), 0) /
        mask.reduce((a, b) => a + b, 0);
      const after = m.values['logprob/after_update'];
      // By more than the rollout engine and the scoring graph differ on the same weights (~1e-6).
      assert.ok(
        typeof after === 'number' && after > sampled + 1e-4,
        `step ${m.step}: mean log-prob of the kept trajectory ${sampled.toFixed(4)} → ${after}`,
      );
    }
    const fractions = metrics.map((m) => m.values['rft/kept_fraction'] as number);
    assert.ok(
      trainedSteps >= 2 && fractions.some((f) => f > 0 && f < 1),
      `the filter kept part of a batch: kept fractions ${fractions.join(', ')}`,
    );
  });
});
