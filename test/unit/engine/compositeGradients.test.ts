/**
 * float64 gradient checks of composites: a full pre-norm decoder block (RMSNorm, rotary
 * embeddings, grouped-query causal attention with padding, SwiGLU, residuals; the Qwen2 and
 * Qwen3 variants) and a masked token log-prob loss — every parameter tensor, worst relative
 * error below 1e-6.
 */
import { describe, it } from 'node:test';
import { gradCheck } from '../../../trainer/engine/check/gradcheck';
import type { Graph, Tensor } from '../../../trainer/engine/graph';
import * as op from '../../../trainer/engine/ops';
import type { HostTensor } from '../../../trainer/engine/runtime/tensors';
import { causalMask } from '../../../trainer/models/layers/attention';
import { decoderBlock } from '../../../trainer/models/layers/decoderBlock';
import { linear } from '../../../trainer/models/layers/linear';
import { rotaryTables } from '../../../trainer/models/layers/rotary';
import { assertGradients, f64, i64, seeded } from '../../helpers/engine';

const B = 2;
const T = 5;
const hidden = 8;
const heads = 4;
const kvHeads = 2;
const headDim = 4;
const ffn = 12;

function blockFeeds(seed: number, qkNorm: boolean, bias: boolean): Record<string, HostTensor> {
  const r = seeded(seed);
  const feeds: Record<string, HostTensor> = {
    x: f64([B, T, hidden], r),
    input_norm: f64([hidden], r, 0.3, 1),
    q: f64([heads * headDim, hidden], r, 0.4),
    k: f64([kvHeads * headDim, hidden], r, 0.4),
    v: f64([kvHeads * headDim, hidden], r, 0.4),
    o: f64([hidden, heads * headDim], r, 0.4),
    post_norm: f64([hidden], r, 0.3, 1),
    gate: f64([ffn, hidden], r, 0.4),
    up: f64([ffn, hidden], r, 0.4),
    down: f64([hidden, ffn], r, 0.4),
    projection: f64([B, T, hidden], r),
    // Left padding on the first sequence, as batched generation produces.
    key_mask: i64([B, T], [0, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
    positions: i64([B, T], [0, 0, 1, 2, 3, 0, 1, 2, 3, 4]),
  };
  if (bias) Object.assign(feeds, { q_bias: f64([heads * headDim], r, 0.2), k_bias: f64([kvHeads * headDim], r, 0.2), v_bias: f64([kvHeads * headDim], r, 0.2) });
  if (qkNorm) Object.assign(feeds, { q_norm: f64([headDim], r, 0.3, 1), k_norm: f64([headDim], r, 0.3, 1) });
  return feeds;
}

function buildBlock(g: Graph, feeds: Record<string, HostTensor>): { loss: Tensor; wrt: Tensor[] } {
  const inputs: Record<string, Tensor> = {};
  for (const [name, v] of Object.entries(feeds)) {
    // Batch and sequence stay symbolic, as in the real model graphs.
    const shape = name === 'x' || name === 'projection' ? ['B', 'T', hidden] : name === 'key_mask' || name === 'positions' ? ['B', 'T'] : v.shape;
    inputs[name] = g.input(name, v.dtype, shape);
  }
  const inverseFrequencies = Float64Array.from({ length: headDim / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / headDim));
  const rotary = rotaryTables(inputs.positions, inverseFrequencies, 'float64');
  const mask = causalMask(inputs.key_mask);
  const out = decoderBlock(
    inputs.x,
    {
      inputNorm: inputs.input_norm,
      attention: { q: inputs.q, k: inputs.k, v: inputs.v, o: inputs.o, qBias: inputs.q_bias, kBias: inputs.k_bias, vBias: inputs.v_bias, qNorm: inputs.q_norm, kNorm: inputs.k_norm },
      postAttentionNorm: inputs.post_norm,
      mlp: { gate: inputs.gate, up: inputs.up, down: inputs.down },
    },
    { numHeads: heads, numKvHeads: kvHeads, headDim, rmsNormEps: 1e-6 },
    rotary,
    mask,
  );
  const loss = op.reduceSum(op.mul(out, inputs.projection));
  const wrt = Object.keys(feeds).filter((n) => !['projection', 'key_mask', 'positions'].includes(n)).map((n) => inputs[n]);
  return { loss, wrt };
}

describe('composite gradients (float64 finite differences)', () => {
  it('a pre-norm decoder block with GQA, rotary, padding and q/k/v bias (Qwen2 shape)', async () => {
    const feeds = blockFeeds(11, false, true);
    assertGradients(await gradCheck((g) => buildBlock(g, feeds), feeds, { maxElementsPerTensor: 16 }));
  });

  it('a pre-norm decoder block with q/k RMSNorm (Qwen3 shape)', async () => {
    const feeds = blockFeeds(12, true, false);
    assertGradients(await gradCheck((g) => buildBlock(g, feeds), feeds, { maxElementsPerTensor: 16 }));
  });

  it('a masked mean token log-prob loss through an LM head', async () => {
    const V = 11;
    const r = seeded(5);
    const feeds: Record<string, HostTensor> = {
      h: f64([B, T, hidden], r),
      lm_head: f64([V, hidden], r, 0.5),
      targets: i64([B, T], [3, 1, 10, 0, 7, 2, 2, 9, 4, 5]),
      loss_mask: { dtype: 'float64', shape: [B, T], data: Float64Array.from([0, 0, 1, 1, 1, 0, 1, 1, 0, 1]) },
    };
    const build = (g: Graph) => {
      const h = g.input('h', 'float64', ['B', 'T', hidden]);
      const head = g.input('lm_head', 'float64', [V, hidden]);
      const targets = g.input('targets', 'int64', ['B', 'T']);
      const mask = g.input('loss_mask', 'float64', ['B', 'T']);
      const logProbs = op.logSoftmax(linear(h, head), -1);
      const tokenLogProbs = op.squeeze(op.gatherElements(logProbs, op.unsqueeze(targets, [-1]), -1), [-1]);
      const loss = op.neg(op.div(op.reduceSum(op.mul(tokenLogProbs, mask)), op.reduceSum(mask)));
      return { loss, wrt: [h, head] };
    };
    assertGradients(await gradCheck(build, feeds));
  });
});
