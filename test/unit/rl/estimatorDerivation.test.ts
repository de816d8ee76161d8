/**
 * Every advantage estimator re-derived by hand on one hand-made batch: the expected numbers are
 * computed here with plain loops straight from the formulas in trainer/pipeline/rl/ADVANTAGES.md — none of
 * the trainer's helpers — and compared with what `computeAdvantages` returns.
 *
 * The batch: two groups. Group 0 has three samples with different numbers of calls (2, 1, 0),
 * rewarded and penalised calls, tool-result tokens between turns and KL in the reward. Group 1's
 * two samples tie on the outcome and earned the same on their one call.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { computeAdvantages, type EstimatorSettings } from '#trainer/pipeline/rl/advantageEstimators';
import type { RlSample } from '#trainer/pipeline/rl/samples';

interface HandSample {
  group: number;
  /** P: prompt or template, G: generated, T: tool result. */
  layout: string;
  outcome: number;
  /** [token, reward] of each call, in order. */
  calls: [number, number][];
  /** −β·KL on generated tokens, by position. */
  kl: Record<number, number>;
  /** Critic values, by position (PPO). */
  values: Record<number, number>;
}

const BATCH: HandSample[] = [
  //        0123456789
  {
    group: 0,
    layout: 'PPGGTTGGTG',
    outcome: 1,
    calls: [
      [3, 0.3],
      [7, -0.1],
    ],
    kl: { 2: -0.01, 6: -0.02, 9: 0.005 },
    values: { 2: 0.1, 3: 0.2, 6: 0.4, 7: 0.3, 9: 0.8 },
  },
  {
    group: 0,
    layout: 'PPGGTTGG',
    outcome: 0,
    calls: [[3, 0.3]],
    kl: { 3: -0.03 },
    values: { 2: 0.2, 3: 0.1, 6: -0.1, 7: 0.05 },
  },
  { group: 0, layout: 'PPGGG', outcome: 0.5, calls: [], kl: {}, values: { 2: 0.3, 3: 0.3, 4: 0.2 } },
  { group: 1, layout: 'PGGTGG', outcome: 0, calls: [[2, -0.1]], kl: {}, values: { 1: 0, 2: 0, 4: 0, 5: 0 } },
  { group: 1, layout: 'PGGTTGG', outcome: 0, calls: [[2, -0.1]], kl: {}, values: { 1: 0, 2: 0, 5: 0, 6: 0 } },
];

const generated = (s: HandSample) => [...s.layout].flatMap((c, i) => (c === 'G' ? [i] : []));
const last = (s: HandSample) => s.layout.lastIndexOf('G');

function toSample(s: HandSample): RlSample {
  const mask = Uint8Array.from(s.layout, (c) => (c === 'G' ? 1 : 0));
  const kl = new Float64Array(s.layout.length);
  for (const [t, v] of Object.entries(s.kl)) kl[Number(t)] = v;
  const values = new Float32Array(s.layout.length);
  for (const [t, v] of Object.entries(s.values)) values[Number(t)] = v;
  return {
    group: s.group,
    mask,
    outcome: { token: last(s), reward: s.outcome },
    calls: s.calls.map(([token, reward]) => ({ token, reward })),
    kl,
    values,
  };
}

const settings = (name: EstimatorSettings['name'], extra: Partial<EstimatorSettings> = {}): EstimatorSettings => ({
  name,
  scaleByStd: name !== 'dr-grpo',
  gamma: 1,
  lambda: 1,
  ...extra,
});

/** Expected advantage per sample per generated token, as a map position → value. */
type Expected = Map<number, number>[];

function sum(xs: number[]): number {
  let total = 0;
  for (const x of xs) total += x;
  return total;
}

/** R_i = outcome + Σ −β·KL. */
function outcomeSide(s: HandSample): number {
  return s.outcome + sum(Object.values(s.kl));
}

/**
 * The group-relative estimators (GRPO, Dr. GRPO, RLOO), by hand: the outcome side compared within
 * the group, plus, for every call index j, (p_ij − baseline_j) on each generated token at or before
 * the call — the call's own token, or the last token for a call the sample did not make (reward 0).
 */
function groupRelative(kind: 'grpo' | 'dr-grpo' | 'rloo'): Expected {
  return BATCH.map((s, i) => {
    const members = BATCH.map((_, k) => k).filter((k) => BATCH[k].group === s.group);
    const others = kind === 'rloo' ? members.filter((k) => k !== i) : members;
    const R = members.map((k) => outcomeSide(BATCH[k]));
    let mean = 0;
    for (const k of others) mean += outcomeSide(BATCH[k]) / others.length;
    let outcomePart = outcomeSide(s) - mean;
    if (kind === 'grpo') {
      const groupMean = sum(R) / R.length;
      let variance = 0;
      for (const r of R) variance += (r - groupMean) ** 2 / (R.length - 1);
      outcomePart = (outcomeSide(s) - groupMean) / (Math.sqrt(variance) + 1e-6);
    }
    let calls = 0;
    for (const k of members) calls = Math.max(calls, BATCH[k].calls.length);
    const out = new Map<number, number>();
    for (const t of generated(s)) {
      let process = 0;
      for (let j = 0; j < calls; j++) {
        let baseline = 0;
        for (const k of others) baseline += (BATCH[k].calls[j]?.[1] ?? 0) / others.length;
        const [token, reward] = s.calls[j] ?? [last(s), 0];
        if (token >= t) process += reward - baseline;
      }
      out.set(t, outcomePart + process);
    }
    return out;
  });
}

/** (x − mean) / (std + 1e-6) over every generated token of the batch, std unbiased. */
function whitened(raw: Expected): Expected {
  const all = raw.flatMap((m) => [...m.values()]);
  const mean = sum(all) / all.length;
  let variance = 0;
  for (const x of all) variance += (x - mean) ** 2 / (all.length - 1);
  return raw.map((m) => new Map([...m].map(([t, x]) => [t, (x - mean) / (Math.sqrt(variance) + 1e-6)])));
}

/** Every reward on its token (outcome, calls, KL), discounted reward-to-go over generated tokens. */
function discountedReturns(gamma: number): Expected {
  return BATCH.map((s) => {
    const tokens = generated(s);
    const out = new Map<number, number>();
    let acc = 0;
    for (let k = tokens.length - 1; k >= 0; k--) {
      const t = tokens[k];
      let r = s.kl[t] ?? 0;
      if (t === last(s)) r += s.outcome;
      for (const [token, reward] of s.calls) if (token === t) r += reward;
      acc = r + gamma * acc;
      out.set(t, acc);
    }
    return out;
  });
}

/** GAE over generated tokens: δ_k = r_k + γ V_{k+1} − V_k, A_k = δ_k + γλ A_{k+1}, V after the last token 0. */
function gae(gamma: number, lambda: number): Expected {
  return BATCH.map((s) => {
    const tokens = generated(s);
    const out = new Map<number, number>();
    let next = 0;
    for (let k = tokens.length - 1; k >= 0; k--) {
      const t = tokens[k];
      let r = s.kl[t] ?? 0;
      if (t === last(s)) r += s.outcome;
      for (const [token, reward] of s.calls) if (token === t) r += reward;
      const nextValue = k + 1 < tokens.length ? s.values[tokens[k + 1]] : 0;
      next = r + gamma * nextValue - s.values[t] + gamma * lambda * next;
      out.set(t, next);
    }
    return out;
  });
}

function check(name: string, got: Float32Array[], expected: Expected): void {
  BATCH.forEach((s, i) => {
    for (let t = 0; t < s.layout.length; t++) {
      const want = expected[i].get(t) ?? 0;
      assert.ok(
        Math.abs(got[i][t] - want) < 2e-6,
        `${name}: sample ${i} token ${t} (${s.layout[t]}): ${got[i][t]}, expected ${want}`,
      );
    }
  });
}

describe('each estimator, re-derived by hand on one batch', () => {
  const samples = BATCH.map(toSample);

  it('GRPO', () => check('grpo', computeAdvantages(settings('grpo'), samples).advantages, groupRelative('grpo')));
  it('Dr. GRPO', () =>
    check('dr-grpo', computeAdvantages(settings('dr-grpo'), samples).advantages, groupRelative('dr-grpo')));
  it('RLOO', () => check('rloo', computeAdvantages(settings('rloo'), samples).advantages, groupRelative('rloo')));
  it('REINFORCE++ (γ = 0.9)', () =>
    check(
      'reinforce++',
      computeAdvantages(settings('reinforce++', { gamma: 0.9 }), samples).advantages,
      whitened(discountedReturns(0.9)),
    ));
  it('REINFORCE++-baseline', () =>
    check(
      'reinforce++-baseline',
      computeAdvantages(settings('reinforce++-baseline'), samples).advantages,
      whitened(groupRelative('dr-grpo')),
    ));
  it('PPO (GAE, γ = 0.95, λ = 0.9, whitened), and its returns', () => {
    const got = computeAdvantages(settings('ppo', { gamma: 0.95, lambda: 0.9 }), samples);
    const raw = gae(0.95, 0.9);
    check('ppo', got.advantages, whitened(raw));
    check(
      'ppo returns',
      got.returns!,
      raw.map((m, i) => new Map([...m].map(([t, a]) => [t, a + BATCH[i].values[t]]))),
    );
  });

  it('a group whose outcomes tie and whose calls earned the same gets zero advantage (GRPO, Dr. GRPO, RLOO)', () => {
    for (const name of ['grpo', 'dr-grpo', 'rloo'] as const) {
      const { advantages } = computeAdvantages(settings(name), samples);
      for (const i of [3, 4])
        assert.ok(
          advantages[i].every((a) => Math.abs(a) < 1e-9),
          `${name}: sample ${i}: ${[...advantages[i]]}`,
        );
    }
  });
});
