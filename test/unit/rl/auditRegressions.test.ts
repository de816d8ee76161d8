/**
 * The defects an audit of trainer/pipeline/rl and trainer/pipeline/rewards found (issue 16), one test each, written
 * against entry points that existed before the fix (scoreTrajectories, toRlSample, the advantage
 * estimators, prepareBatch, parseConfig) so that each of them fails on the code the audit read
 * and passes on the fix. The critic's defect (its value loss moved the policy) needs a model and
 * is in test/integration/training/critic.test.ts.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { datasetFromRows, type DatasetRow } from '#trainer/foundations/data';
import { exactMatch, RewardError, scoreTrajectories, type RewardConfig } from '#trainer/pipeline/rewards';
import { grpoAdvantages, reinforcePlusPlusAdvantages, rlooAdvantages } from '#trainer/pipeline/rl/advantages';
import { lossMasks, prepareBatch, type BatchSettings } from '#trainer/pipeline/rl/prepareBatch';
import { toRlSample } from '#trainer/pipeline/rl/rewardPlacement';
import type { ToolCallResult, Trajectory } from '#trainer/pipeline/rollout';
import { defineTool, ToolSet } from '#trainer/foundations/tools';
import { parseConfig, type TrainingConfig } from '#trainer/pipeline/training/config/trainingConfig';

const [row] = datasetFromRows('rows.jsonl', [{ id: 'q', prompt: 'q', answer: 'x' }]).rows;
const search = defineTool({
  name: 'search',
  description: 'Search.',
  parameters: z.object({ query: z.string() }),
  execute: () => 'result',
  reward: () => 1,
});
const tools = new ToolSet([search]);

/** `layout`: P prompt/template, G generated, T tool result; calls end on generated tokens. */
function trajectory(
  index: number,
  layout: string,
  answer: string,
  calls: Partial<ToolCallResult>[],
  logprobs?: number[],
): Trajectory {
  const mask = [...layout].map((c) => (c === 'G' ? 1 : 0));
  return {
    index,
    rowId: row.id,
    group: 0,
    sample: index,
    row: row as DatasetRow,
    prompt: 'q',
    messages: [],
    ids: mask.map((_, i) => 100 + i),
    mask,
    logprobs: logprobs ?? mask.map(() => 0),
    entropies: mask.map(() => 0),
    promptLength: layout.indexOf('G'),
    turns: [
      {
        index: 0,
        role: 'assistant',
        tokenStart: layout.lastIndexOf('T') + 1,
        tokenEnd: layout.length,
        finish: 'eos',
        assistantTurn: 0,
        content: answer,
      },
    ],
    calls: calls.map((c, i) => ({
      turn: 0,
      turnIndex: 0,
      index: i,
      raw: '',
      observation: '',
      truncated: false,
      latencyMs: 1,
      tokenEnd: 0,
      logs: [],
      ...c,
    })),
    finishReason: 'answered',
    historyRewrites: [],
  };
}

const searched = (tokenEnd: number): Partial<ToolCallResult> => ({
  name: 'search',
  arguments: { query: 'q' },
  result: { content: [{ type: 'text', text: 'result' }] },
  tokenEnd,
});
const failed = (tokenEnd: number): Partial<ToolCallResult> => ({ error: { kind: 'parse', message: 'bad' }, tokenEnd });

const config = (algorithm: Record<string, unknown>, rewards: Partial<RewardConfig> = {}): TrainingConfig =>
  parseConfig(
    {
      model: { path: 'model' },
      data: { train: 'train.jsonl' },
      rewards: { outcome: [exactMatch()], ...rewards },
      algorithm,
      steps: 1,
    },
    'a.config.ts',
  );

describe('the audit of issue 16, defect by defect', () => {
  it('2. combine "agent-r1" does not amplify: a lone 0.05 penalty stays −0.05 (it became −1 and cancelled a correct answer)', async () => {
    const right = trajectory(0, 'PGGTGG', '<answer>x</answer>', [failed(2)]);
    const batch = await scoreTrajectories(
      [right],
      { outcome: [exactMatch()], toolRewards: false, errorPenalty: 0.05, combine: 'agent-r1' },
      tools,
    );
    assert.ok(
      Math.abs(batch.trajectories[0].calls[0].scaled + 0.05) < 1e-12,
      `the penalty entered the return as ${batch.trajectories[0].calls[0].scaled}`,
    );
    assert.ok(Math.abs(batch.trajectories[0].total - 0.95) < 1e-12, `total ${batch.trajectories[0].total}`);
  });

  it('3. process rewards are centred: a group that ties, with the same rewarded call, gets zero advantage everywhere (the answer got −r)', async () => {
    // Two samples: a rewarded search (tool reward 1 × weight 0.1) ending on token 2, then the same correct answer.
    const group = [
      trajectory(0, 'PGGTGG', '<answer>x</answer>', [searched(2)]),
      trajectory(1, 'PGGTTGG', '<answer>x</answer>', [searched(2)]),
    ];
    const scored = await scoreTrajectories(group, { outcome: [exactMatch()], toolRewards: { weight: 0.1 } }, tools);
    const samples = group.map((t, i) => toRlSample(t, scored.trajectories[i]));
    const estimators = {
      grpo: grpoAdvantages(samples, { scaleByStd: true }),
      'grpo without std': grpoAdvantages(samples, { scaleByStd: false }),
      rloo: rlooAdvantages(samples),
      // A batch of one group: REINFORCE++-baseline's whitening has nothing to shift (it turned −0.1 into ±0.97).
      'reinforce++-baseline': reinforcePlusPlusAdvantages(samples, { gamma: 1, baseline: true }),
    };
    for (const [name, { advantages }] of Object.entries(estimators)) {
      advantages.forEach((a, i) =>
        assert.ok(
          a.every((x) => Math.abs(x) < 1e-9),
          `${name}, sample ${i}: ${[...a].map((x) => x.toFixed(3)).join(' ')}`,
        ),
      );
    }
  });

  it('4a. REINFORCE++ runs with its token-level KL in the reward by default (kl.coef was 0)', () => {
    for (const name of ['reinforce++', 'reinforce++-baseline'] as const) {
      assert.deepEqual(config({ name }).algorithm.kl, { coef: 0.001, estimator: 'k1', mode: 'reward' }, name);
    }
  });

  it('4b. Dr. GRPO is a name with its constant normaliser, not only GRPO without the std', () => {
    const a = config({ name: 'dr-grpo' }).algorithm;
    assert.equal(a.scaleByStd, false);
    assert.equal(a.aggregation, 'seq-mean-token-sum-norm');
    assert.equal(a.kl.coef, 0);
  });

  it('5a. a negative errorPenalty is refused, naming the field (it silently became a bonus for failing)', async () => {
    const t = trajectory(0, 'PGGTGG', '<answer>x</answer>', [failed(2)]);
    await assert.rejects(
      scoreTrajectories([t], { outcome: [], errorPenalty: -0.1 }, tools),
      (e: unknown) =>
        e instanceof RewardError && /^rewards\.errorPenalty: expected a finite number ≥ 0/.test(e.message),
    );
    assert.throws(
      () => config({ name: 'grpo' }, { errorPenalty: { timeout: -1 } }),
      /a\.config\.ts: rewards\.errorPenalty\.timeout: expected a finite number ≥ 0/,
    );
  });

  it("5b. lossMask 'response' with KL in the reward takes no KL on tool tokens (their sampling log-prob is a placeholder 0)", async () => {
    // Two samples that differ only in their tool result's tokens. On generated tokens the policy and
    // the reference agree (KL 0); on the tool tokens the reference gives −3, the placeholder 0.
    const group = [
      trajectory(0, 'PGGTGG', '<answer>x</answer>', [searched(2)], [0, -1, -1, 0, -1, -1]),
      trajectory(1, 'PGGTTTGG', '<answer>x</answer>', [searched(2)], [0, -1, -1, 0, 0, 0, -1, -1]),
    ];
    const scored = await scoreTrajectories(group, { outcome: [exactMatch()] }, tools);
    const samples = group.map((t, i) => toRlSample(t, scored.trajectories[i]));
    const settings: BatchSettings = {
      lossMask: 'response',
      kl: { coef: 1, estimator: 'k1', mode: 'reward' },
      estimator: { name: 'grpo', scaleByStd: false, gamma: 1, lambda: 1 },
    };
    const reference = group.map((t) => Float32Array.from(t.mask, (m) => (m ? -1 : -3)));
    const policy = group.map((t) => Float32Array.from(t.mask, (m) => (m ? -1 : -2)));
    const prepared = prepareBatch(group, samples, lossMasks(group, 'response'), { reference, policy }, settings);
    prepared.advantages.advantages.forEach((a, i) =>
      assert.ok(
        a.every((x) => Math.abs(x) < 1e-9),
        `sample ${i}: ${[...a].map((x) => x.toFixed(3)).join(' ')}`,
      ),
    );
  });

  it("5c. PPO's clipHigh defaults to 0.2, as its paper and verl's clip_ratio_high (it was 0.28, DAPO's clip-higher)", () => {
    const a = config({ name: 'ppo' }).algorithm;
    assert.equal(a.clipLow, 0.2);
    assert.equal(a.clipHigh, 0.2);
  });
});
