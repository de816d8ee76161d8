import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import {
  gaeAdvantages,
  grpoAdvantages,
  reinforcePlusPlusAdvantages,
  rlooAdvantages,
} from '#trainer/pipeline/rl/advantages';
import { klPenalty } from '#trainer/pipeline/rl/kl';
import type { RlSample } from '#trainer/pipeline/rl/samples';

/**
 * A sample whose policy tokens are at `policy`, with rewards {position: value}: the value on the
 * last policy token is the outcome, every other one a call's reward (in token order).
 */
function sample(
  group: number,
  length: number,
  policy: number[],
  rewards: Record<number, number>,
  values?: number[],
): RlSample {
  const mask = new Uint8Array(length);
  for (const p of policy) mask[p] = 1;
  const last = Math.max(...policy);
  const calls = Object.entries(rewards)
    .map(([p, v]) => ({ token: Number(p), reward: v }))
    .filter((c) => c.token !== last)
    .sort((a, b) => a.token - b.token);
  return {
    group,
    mask,
    outcome: { token: last, reward: rewards[last] ?? 0 },
    calls,
    ...(values ? { values: Float32Array.from(values) } : {}),
  };
}

const close = (a: number, b: number, message = '', tol = 1e-6) =>
  assert.ok(Math.abs(a - b) < tol, `${a} ≠ ${b} ${message}`);

describe('advantage estimators', () => {
  // Group 0: returns 1, 0, 1, 0 (outcome on the last policy token); group 1: 0.5 and 0.5.
  const outcomeOnly = [
    sample(0, 6, [2, 3, 5], { 5: 1 }),
    sample(0, 6, [2, 3, 4], { 4: 0 }),
    sample(0, 5, [3, 4], { 4: 1 }),
    sample(0, 4, [1, 2, 3], { 3: 0 }),
    sample(1, 4, [2, 3], { 3: 0.5 }),
    sample(1, 4, [2, 3], { 3: 0.5 }),
  ];

  it('GRPO: (R − group mean) / (group std + ε) on every policy token, zero elsewhere', () => {
    const { advantages } = grpoAdvantages(outcomeOnly, { scaleByStd: true });
    const std = Math.sqrt((4 * 0.25) / 3); // unbiased std of 1, 0, 1, 0
    close(advantages[0][2], 0.5 / (std + 1e-6));
    close(advantages[0][5], 0.5 / (std + 1e-6));
    assert.equal(advantages[0][4], 0, 'a non-policy token gets no advantage');
    close(advantages[1][3], -0.5 / (std + 1e-6));
    assert.equal(advantages[4][2], 0, 'a group whose samples all tie gets zero advantage');
  });

  it('Dr. GRPO: no division by the standard deviation', () => {
    const { advantages } = grpoAdvantages(outcomeOnly, { scaleByStd: false });
    close(advantages[0][2], 0.5);
    close(advantages[3][1], -0.5);
  });

  it('RLOO: the baseline is the mean of the other samples in the group', () => {
    const { advantages } = rlooAdvantages(outcomeOnly);
    close(advantages[0][2], 1 - 1 / 3);
    close(advantages[1][2], 0 - 2 / 3);
    close(advantages[5][3], 0);
  });

  it('GRPO with process rewards: each call is compared with the same-numbered call of the group', () => {
    // Sample 0: a call ending at token 2 earns 0.2, outcome 1 at token 5; sample 1: no call, outcome 0.
    const withProcess = [sample(0, 6, [1, 2, 4, 5], { 2: 0.2, 5: 1 }), sample(0, 6, [1, 2, 4, 5], { 5: 0 })];
    const { advantages } = grpoAdvantages(withProcess, { scaleByStd: false });
    // Outcome side: 1 and 0, mean 0.5. Call 1: 0.2 and (none) 0, mean 0.1.
    close(advantages[0][1], 0.5 + 0.1);
    close(advantages[0][2], 0.5 + 0.1, 'the call token itself carries the call');
    close(advantages[0][4], 0.5, 'the tokens after the call do not');
    // The sample that made no call counts 0 for it, on its last token: below the group on every token.
    close(advantages[1][1], -0.5 - 0.1);
    close(advantages[1][5], -0.5 - 0.1);
  });

  it('GRPO with process rewards: the group std scales the outcome side only; tied outcomes and equal calls give zero', () => {
    // Both samples fail one call (−0.1 at token 2, outcome 0 at token 5): outcomes tie (std 0), calls equal.
    const tied = [sample(0, 6, [1, 2, 4, 5], { 2: -0.1, 5: 0 }), sample(0, 6, [1, 2, 4, 5], { 2: -0.1, 5: 0 })];
    const { advantages } = grpoAdvantages(tied, { scaleByStd: true });
    for (const a of advantages) for (const t of [1, 2, 4, 5]) close(a[t], 0);
    // Outcomes 1 and 0 (std 0.7071): the outcome side is scaled, the process side is not.
    const std = Math.sqrt(0.5);
    const mixed = grpoAdvantages([sample(0, 6, [1, 2, 4, 5], { 2: 0.2, 5: 1 }), sample(0, 6, [1, 2, 4, 5], { 5: 0 })], {
      scaleByStd: true,
    }).advantages;
    close(mixed[0][1], 0.5 / (std + 1e-6) + 0.1);
    close(mixed[0][4], 0.5 / (std + 1e-6));
    close(mixed[1][1], -0.5 / (std + 1e-6) - 0.1);
  });

  it('REINFORCE++: discounted reward-to-go whitened over all policy tokens of the batch', () => {
    const samples = [sample(0, 5, [1, 2, 4], { 2: 0.5, 4: 1 }), sample(1, 4, [1, 3], { 3: -1 })];
    const gamma = 0.9;
    const { advantages } = reinforcePlusPlusAdvantages(samples, { gamma, baseline: false });
    const raw = [1 * gamma ** 2 + 0.5 * gamma, 0.5 + gamma * 1, 1, -1 * gamma, -1];
    const mean = raw.reduce((a, b) => a + b, 0) / raw.length;
    const std = Math.sqrt(raw.reduce((a, x) => a + (x - mean) ** 2, 0) / (raw.length - 1));
    close(advantages[0][1], (raw[0] - mean) / (std + 1e-6));
    close(advantages[0][4], (raw[2] - mean) / (std + 1e-6));
    close(advantages[1][3], (raw[4] - mean) / (std + 1e-6));
    assert.equal(advantages[0][3], 0);
    const policyValues = [advantages[0][1], advantages[0][2], advantages[0][4], advantages[1][1], advantages[1][3]];
    close(
      policyValues.reduce((a, b) => a + b, 0),
      0,
      'whitened values sum to zero',
      1e-5,
    );
  });

  it('REINFORCE++ with baseline subtracts the group mean return before whitening', () => {
    const samples = [
      sample(0, 3, [1, 2], { 2: 1 }),
      sample(0, 3, [1, 2], { 2: 0 }),
      sample(1, 3, [1, 2], { 2: 1 }),
      sample(1, 3, [1, 2], { 2: 1 }),
    ];
    const { advantages } = reinforcePlusPlusAdvantages(samples, { gamma: 1, baseline: true });
    // After the baseline: 0.5, 0.5, −0.5, −0.5, 0, 0, 0, 0 → mean 0.
    assert.ok(advantages[0][1] > 0 && advantages[1][1] < 0);
    close(advantages[2][1], 0);
    close(advantages[0][1], -advantages[1][1]);
  });

  it('GAE over policy tokens only: tool tokens are not time steps', () => {
    // Policy tokens at 1, 2 (a tool call), then tool tokens 3–4, then 5, 6.
    const s = sample(0, 7, [1, 2, 5, 6], { 2: 0.3, 6: 1 }, [0, 0.1, 0.2, 9, 9, 0.4, 0.5]);
    const gamma = 0.95;
    const lambda = 0.9;
    const { advantages, returns } = gaeAdvantages([s], { gamma, lambda, whiten: false });
    const v = [0.1, 0.2, 0.4, 0.5];
    const r = [0, 0.3, 0, 1];
    const expected = new Array(4).fill(0);
    let next = 0;
    for (let k = 3; k >= 0; k--) {
      const delta = r[k] + gamma * (k + 1 < 4 ? v[k + 1] : 0) - v[k];
      next = delta + gamma * lambda * next;
      expected[k] = next;
    }
    [1, 2, 5, 6].forEach((pos, k) => {
      close(advantages[0][pos], expected[k]);
      close(returns![0][pos], expected[k] + v[k]);
    });
    assert.equal(advantages[0][3], 0, 'the values at tool tokens (9) play no part');
  });

  it('KL in the reward: −β·KL on every sampled token, nothing elsewhere', () => {
    const sampled = Uint8Array.from([0, 1, 1]);
    const out = klPenalty(sampled, Float32Array.from([0, -1, -2]), Float32Array.from([0.3, -1.5, -1]), 0.1, 'k1');
    close(out[0], 0);
    close(out[1], -0.1 * 0.5);
    close(out[2], -0.1 * -1);
  });
});
