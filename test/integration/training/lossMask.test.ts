/**
 * The loss mask: by default the policy loss covers exactly the tokens the policy generated;
 * `algorithm.lossMask: 'response'` (Agent-R1's "loss mask off" ablation) also covers the tool
 * results and template text after the prompt. Checked on the tiny agent, which calls `search`
 * in every trajectory, so the two masks differ.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunStoreReader } from '#trainer/contract/runstore';
import { TrainingRun } from '#trainer/pipeline/training/trainingRun';
import { writeTinyAgentWorkspace } from '../../fixtures/tinyAgent';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';

let dir: string;
let configFile: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loss-mask-'));
  configFile = await writeTinyAgentWorkspace(dir, { steps: 1, promptsPerStep: 2, groupSize: 2 });
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** One GRPO step; what the loss covered, and what the rollouts generated and hold after their prompts. */
async function oneStep(name: string, lossMask?: 'generated' | 'response') {
  const loaded = await loadConfig(configFile);
  if (lossMask) loaded.config.algorithm.lossMask = lossMask;
  const runDir = path.join(dir, 'runs', name);
  assert.equal((await new TrainingRun(loaded, { runDir, inProcessDevice: true }).run()).run.status, 'finished');
  const reader = new RunStoreReader(runDir);
  const [metrics] = reader.metrics().records.filter((m) => m.kind === 'train');
  const trajectories = reader.trajectories(1).records;
  return {
    inLoss: metrics.values['tokens/in_loss'],
    lossTotal: metrics.values['loss/total'],
    generated: trajectories.reduce((n, t) => n + Buffer.from(t.tokens.mask, 'base64').reduce((a, m) => a + m, 0), 0),
    afterPrompt: trajectories.reduce((n, t) => n + t.lengths.total - t.lengths.prompt, 0),
    calls: trajectories.reduce((n, t) => n + t.turns.reduce((c, turn) => c + (turn.toolCalls?.length ?? 0), 0), 0),
  };
}

describe('the loss mask', () => {
  it('covers the generated tokens by default, and every response token with lossMask "response"', async () => {
    const masked = await oneStep('generated');
    const unmasked = await oneStep('response', 'response');
    assert.ok(masked.calls > 0, 'the tiny agent calls its tool, so tool results follow the prompt');
    assert.equal(masked.inLoss, masked.generated);
    // Same seed, same rollouts: only the mask differs.
    assert.equal(unmasked.generated, masked.generated);
    assert.equal(unmasked.inLoss, unmasked.afterPrompt);
    assert.ok(
      unmasked.inLoss > unmasked.generated,
      `${unmasked.inLoss} tokens in the loss vs ${unmasked.generated} generated`,
    );
    assert.ok(Number.isFinite(unmasked.lossTotal), 'the update ran on the wider mask');
  });
});
