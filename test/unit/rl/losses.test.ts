import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { gradCheck } from '../../helpers/gradcheck';
import { Graph } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import { runGraphOnce } from '#trainer/foundations/engine/runtime/run';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { klTerm, policyLoss, valueLoss, type PolicyLossConfig } from '#trainer/pipeline/rl/losses';
import { klEstimate } from '#trainer/pipeline/rl/kl';
import { assertGradients, seeded } from '../../helpers/engine';

const B = 3;
const T = 5;
const r = seeded(21);
const arr = (f: (i: number) => number) => Float64Array.from({ length: B * T }, (_, i) => f(i));
const data = {
  logprobs: arr(() => -Math.abs(r() * 2)),
  oldLogprobs: arr(() => -Math.abs(r() * 2)),
  advantages: arr(() => (r() - 0.5) * 3),
  mask: arr((i) => (i % T === 0 || (i >= 2 * T && i % T > 2) ? 0 : 1)),
  ref: arr(() => -Math.abs(r() * 2)),
};
const t = (values: Float64Array): HostTensor => ({ dtype: 'float64', shape: [B, T], data: values });

/** The objective, term by term, in plain JavaScript. */
function reference(c: PolicyLossConfig): number {
  const perToken = (i: number) => {
    const ratio = Math.exp(data.logprobs[i] - data.oldLogprobs[i]);
    const a = data.advantages[i];
    let pg = -Math.min(ratio * a, Math.min(Math.max(ratio, 1 - c.clipLow), 1 + c.clipHigh) * a);
    if (c.dualClip !== undefined && a < 0) pg = Math.min(pg, -c.dualClip * a);
    return pg + c.klCoef * klEstimate(data.logprobs[i], data.ref[i], c.klEstimator);
  };
  if (c.aggregation === 'seq-mean-token-sum-norm') {
    // Dr. GRPO: every sequence's token sum over the constant C, averaged over the sequences that have tokens.
    let sum = 0;
    let sequences = 0;
    for (let b = 0; b < B; b++) {
      let any = false;
      for (let k = 0; k < T; k++) {
        if (!data.mask[b * T + k]) continue;
        sum += perToken(b * T + k);
        any = true;
      }
      if (any) sequences++;
    }
    return sum / (sequences * c.lossScaleFactor!);
  }
  if (c.aggregation === 'token-mean') {
    let sum = 0;
    let n = 0;
    for (let i = 0; i < B * T; i++) {
      if (!data.mask[i]) continue;
      sum += perToken(i);
      n++;
    }
    return sum / n;
  }
  let total = 0;
  let sequences = 0;
  for (let b = 0; b < B; b++) {
    let sum = 0;
    let n = 0;
    for (let k = 0; k < T; k++) {
      if (!data.mask[b * T + k]) continue;
      sum += perToken(b * T + k);
      n++;
    }
    if (n === 0) continue;
    total += sum / n;
    sequences++;
  }
  return total / sequences;
}

function build(g: Graph, c: PolicyLossConfig) {
  const inputs = {
    logprobs: g.input('logprobs', 'float64', ['B', 'T']),
    oldLogprobs: g.input('old', 'float64', ['B', 'T']),
    advantages: g.input('adv', 'float64', ['B', 'T']),
    mask: g.input('mask', 'float64', ['B', 'T']),
    refLogprobs: g.input('ref', 'float64', ['B', 'T']),
  };
  return { out: policyLoss(inputs, c), inputs };
}

const feeds = {
  logprobs: t(data.logprobs),
  old: t(data.oldLogprobs),
  adv: t(data.advantages),
  mask: t(data.mask),
  ref: t(data.ref),
};
const base: PolicyLossConfig = {
  clipLow: 0.2,
  clipHigh: 0.28,
  aggregation: 'token-mean',
  klCoef: 0,
  klEstimator: 'k3',
  entropyCoef: 0,
};
const variants: Array<[string, PolicyLossConfig]> = [
  ['token-mean, asymmetric clip', base],
  ['sequence-mean of token-means', { ...base, aggregation: 'seq-mean-token-mean' }],
  [
    'Dr. GRPO: token sums over a constant (C = 7), sequence-mean',
    { ...base, aggregation: 'seq-mean-token-sum-norm', lossScaleFactor: 7, klCoef: 0.05, klEstimator: 'k2' },
  ],
  ['dual clip', { ...base, dualClip: 3 }],
  ['KL loss k1', { ...base, klCoef: 0.1, klEstimator: 'k1' }],
  ['KL loss k2', { ...base, klCoef: 0.1, klEstimator: 'k2' }],
  [
    'KL loss k3 with dual clip, sequence-mean',
    { ...base, klCoef: 0.05, klEstimator: 'k3', dualClip: 2.5, aggregation: 'seq-mean-token-mean' },
  ],
];

describe('policy loss', () => {
  for (const [name, config] of variants) {
    it(`${name}: equals the term-by-term reference and its gradient checks`, async () => {
      const g = new Graph('loss');
      const { out } = build(g, config);
      g.output(out.loss, 'loss');
      g.output(out.clipFraction, 'clip');
      const result = await runGraphOnce(g, feeds, { provider: 'cpu', optimization: 'basic' });
      const expected = reference(config);
      assert.ok(Math.abs(Number(result.loss.data[0]) - expected) < 1e-12, `loss ${result.loss.data[0]} vs ${expected}`);
      assert.ok(Number(result.clip.data[0]) > 0, 'some ratios are clipped in this data');
      const checks = await gradCheck((graph) => {
        const built = build(graph, config);
        return { loss: built.out.loss, wrt: [built.inputs.logprobs] };
      }, feeds);
      assertGradients(checks);
    });
  }

  it("clip-higher as DAPO decouples it: ε_high 0.28 lets a rising token's ratio reach 1.28, ε_low 0.2 still bounds a falling one", async () => {
    // Token 0: ratio 1.25, advantage +1. Token 1: ratio 0.75, advantage −1.
    const old = Float64Array.of(-1, -2);
    const advantages = Float64Array.of(1, -1);
    const shape = [1, 2];
    const tensor = (values: Float64Array): HostTensor => ({ dtype: 'float64', shape, data: values });
    const run = async (config: PolicyLossConfig, logprobs: Float64Array) => {
      const g = new Graph('clip_higher');
      const out = policyLoss(
        {
          logprobs: g.input('logprobs', 'float64', shape),
          oldLogprobs: g.input('old', 'float64', shape),
          advantages: g.input('adv', 'float64', shape),
          mask: g.input('mask', 'float64', shape),
        },
        config,
      );
      g.output(out.loss, 'loss');
      g.output(out.clipFraction, 'clip');
      const result = await runGraphOnce(
        g,
        { logprobs: tensor(logprobs), old: tensor(old), adv: tensor(advantages), mask: tensor(Float64Array.of(1, 1)) },
        { provider: 'cpu', optimization: 'basic' },
      );
      return { loss: Number(result.loss.data[0]), clip: Number(result.clip.data[0]) };
    };
    const at = Float64Array.of(old[0] + Math.log(1.25), old[1] + Math.log(0.75));
    /** d loss / d logprob of token i, by central differences. */
    const slope = async (config: PolicyLossConfig, i: number) => {
      const h = 1e-6;
      const plus = Float64Array.from(at, (v, k) => (k === i ? v + h : v));
      const minus = Float64Array.from(at, (v, k) => (k === i ? v - h : v));
      return ((await run(config, plus)).loss - (await run(config, minus)).loss) / (2 * h);
    };
    const dapo: PolicyLossConfig = {
      clipLow: 0.2,
      clipHigh: 0.28,
      aggregation: 'token-mean',
      klCoef: 0,
      klEstimator: 'k3',
      entropyCoef: 0,
    };
    const symmetric: PolicyLossConfig = { ...dapo, clipHigh: 0.2 };
    // Token-mean over 2 tokens: −ratio·A / 2 → slope −1.25 / 2 for the rising token while it is not clipped.
    assert.ok(Math.abs((await slope(dapo, 0)) + 0.625) < 1e-6, 'under ε_high 0.28 the rising token still learns');
    assert.equal(await slope(symmetric, 0), 0, 'under a symmetric 0.2 it is clipped');
    for (const config of [dapo, symmetric])
      assert.equal(await slope(config, 1), 0, 'the falling token is clipped by ε_low 0.2 either way');
    assert.equal((await run(dapo, at)).clip, 0.5);
    assert.equal((await run(symmetric, at)).clip, 1);
  });

  it('KL estimators k1, k2, k3 agree between the graph and JavaScript', async () => {
    for (const estimator of ['k1', 'k2', 'k3'] as const) {
      const g = new Graph('kl');
      g.output(klTerm(g.input('logprobs', 'float64', [B, T]), g.input('ref', 'float64', [B, T]), estimator), 'kl');
      const out = (
        await runGraphOnce(g, { logprobs: feeds.logprobs, ref: feeds.ref }, { provider: 'cpu', optimization: 'basic' })
      ).kl.data as Float64Array;
      out.forEach((v, i) => assert.ok(Math.abs(v - klEstimate(data.logprobs[i], data.ref[i], estimator)) < 1e-12));
      if (estimator === 'k3')
        assert.ok(
          Array.from(out).every((v) => v >= 0),
          'k3 is non-negative',
        );
    }
  });

  it('k3 is bounded as verl bounds it: a token whose probability fell by e^17 adds 10, not 2.4e7, and no gradient past the bound', async () => {
    // log π − log π_ref per token: far below the reference, below it, equal, above, far above.
    const logRatios = [-17, -25, -2, 0, 0.5, 12];
    const ref = Float64Array.from(logRatios, () => -1.5);
    const logprobs = Float64Array.from(logRatios, (x, i) => ref[i] + x);
    const expected = logRatios.map((x) => Math.min(Math.exp(-Math.max(x, -20)) + Math.max(x, -20) - 1, 10));
    assert.deepEqual(
      expected.map((v) => Number(v.toFixed(6))),
      [10, 10, Number((Math.exp(2) - 3).toFixed(6)), 0, Number((Math.exp(-0.5) - 0.5).toFixed(6)), 10],
    );
    logRatios.forEach((x, i) =>
      assert.ok(
        Math.abs(klEstimate(logprobs[i], ref[i], 'k3') - expected[i]) < 1e-12,
        `JavaScript k3 at log-ratio ${x}`,
      ),
    );
    const shape = [1, logRatios.length];
    const tensor = (values: Float64Array): HostTensor => ({ dtype: 'float64', shape, data: values });
    const g = new Graph('k3_bounded');
    g.output(klTerm(g.input('logprobs', 'float64', shape), g.input('ref', 'float64', shape), 'k3'), 'kl');
    const out = (
      await runGraphOnce(
        g,
        { logprobs: tensor(logprobs), ref: tensor(ref) },
        { provider: 'cpu', optimization: 'basic' },
      )
    ).kl.data as Float64Array;
    out.forEach((v, i) => assert.ok(Math.abs(v - expected[i]) < 1e-12, `graph k3 at log-ratio ${logRatios[i]}: ${v}`));
    // The gradient matches central differences inside the bounds, and past them it is exactly 0
    // (checked alone: with nothing but bounded tokens, any analytic gradient at all is an error).
    const gradientOf = (pick: number[]) =>
      gradCheck(
        (graph) => {
          const lp = graph.input('logprobs', 'float64', [1, pick.length]);
          return { loss: op.reduceSum(klTerm(lp, graph.input('ref', 'float64', [1, pick.length]), 'k3')), wrt: [lp] };
        },
        {
          logprobs: { dtype: 'float64', shape: [1, pick.length], data: Float64Array.from(pick, (i) => logprobs[i]) },
          ref: { dtype: 'float64', shape: [1, pick.length], data: Float64Array.from(pick, (i) => ref[i]) },
        },
      );
    assertGradients(await gradientOf([2, 3, 4]));
    const [past] = await gradientOf([0, 1, 5]);
    assert.equal(past.maxAbsNumeric, 0);
    assert.ok(
      past.relativeError === 0,
      `past the bounds the analytic gradient is not 0 (relative error ${past.relativeError})`,
    );
  });

  it('the value loss clips as PPO does', async () => {
    const g = new Graph('value');
    const v = g.input('v', 'float64', [B, T]);
    const old = g.input('old', 'float64', [B, T]);
    const ret = g.input('ret', 'float64', [B, T]);
    const mask = g.input('mask', 'float64', [B, T]);
    g.output(valueLoss(v, old, ret, mask, { clip: 0.2, aggregation: 'token-mean' }), 'loss');
    const values = arr(() => r() * 2);
    const olds = arr(() => r() * 2);
    const returns = arr(() => r() * 2);
    const out = Number(
      (
        await runGraphOnce(
          g,
          { v: t(values), old: t(olds), ret: t(returns), mask: t(data.mask) },
          { provider: 'cpu', optimization: 'basic' },
        )
      ).loss.data[0],
    );
    let sum = 0;
    let n = 0;
    for (let i = 0; i < B * T; i++) {
      if (!data.mask[i]) continue;
      const clipped = olds[i] + Math.min(Math.max(values[i] - olds[i], -0.2), 0.2);
      sum += Math.max((values[i] - returns[i]) ** 2, (clipped - returns[i]) ** 2);
      n++;
    }
    assert.ok(Math.abs(out - (0.5 * sum) / n) < 1e-12);
  });
});
