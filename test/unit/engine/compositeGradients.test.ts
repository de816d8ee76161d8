/**
 * float64 gradient checks of composites: a pre-norm decoder (embedding, RMSNorm, rotary
 * embeddings, grouped-query causal attention with left padding, SwiGLU MLP, residuals, final
 * norm — the Qwen2 shape with q/k/v bias and the Qwen3 shape with q/k norms) and a masked token
 * log-prob loss through an LM head: every parameter tensor, worst relative error below 1e-6.
 */
import { describe, it } from 'node:test';
import { gradCheck } from '../../helpers/gradcheck';
import type { Graph } from '#trainer/foundations/engine/graph';
import * as op from '#trainer/foundations/engine/ops';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { parseModelConfig } from '#trainer/foundations/models/modelConfig';
import { decoderTrunk, WeightInputs } from '#trainer/foundations/models/decoder';
import { linear } from '#trainer/foundations/models/layers/linear';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { assertGradients, f64, i64, seeded } from '../../helpers/engine';

const B = 2;
const T = 5;
const hidden = 8;

function blockConfig(family: 'qwen2' | 'qwen3') {
  return parseModelConfig(
    {
      architectures: [family === 'qwen2' ? 'Qwen2ForCausalLM' : 'Qwen3ForCausalLM'],
      model_type: family,
      vocab_size: 13,
      hidden_size: hidden,
      intermediate_size: 12,
      num_hidden_layers: 1,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: family === 'qwen3' ? 4 : undefined,
      rms_norm_eps: 1e-6,
      rope_theta: 10000,
      max_position_embeddings: 64,
      hidden_act: 'silu',
    },
    `${family}/config.json`,
  );
}

async function checkBlock(family: 'qwen2' | 'qwen3', seed: number): Promise<void> {
  const config = blockConfig(family);
  const r = seeded(seed);
  const feeds: Record<string, HostTensor> = {
    // Left padding on the first sequence, as batched generation produces.
    ids: i64([B, T], [0, 3, 7, 1, 12, 5, 5, 9, 2, 11]),
    key_mask: i64([B, T], [0, 1, 1, 1, 1, 1, 1, 1, 1, 1]),
    positions: i64([B, T], [0, 0, 1, 2, 3, 0, 1, 2, 3, 4]),
  };
  for (const t of expectedTensors(config))
    feeds[t.name] = f64(t.shape, r, t.role === 'norm' ? 0.3 : 0.4, t.role === 'norm' ? 1 : 0);
  // A padded query's output is never used (the loss masks it), so the projection ignores it.
  const projection = f64([B, T, hidden], r);
  for (let i = 0; i < hidden; i++) (projection.data as Float64Array)[i] = 0;
  feeds.projection = projection;
  const build = (g: Graph) => {
    const ids = g.input('ids', 'int64', ['B', 'T']);
    const keyMask = g.input('key_mask', 'int64', ['B', 'T']);
    const positions = g.input('positions', 'int64', ['B', 'T']);
    const weights = new WeightInputs(g, 'float64');
    const out = decoderTrunk(g, config, weights, { ids, positions, keyMask }, { dtype: 'float64' });
    const loss = op.reduceSum(op.mul(out, g.input('projection', 'float64', ['B', 'T', hidden])));
    // Every weight the layer reads (the LM head is not part of the trunk).
    return { loss, wrt: [...weights.used.values()] };
  };
  assertGradients(await gradCheck(build, feeds, { maxElementsPerTensor: 16 }));
}

describe('composite gradients (float64 finite differences)', () => {
  it('a pre-norm decoder layer with GQA, rotary, left padding and q/k/v bias (Qwen2 shape)', () =>
    checkBlock('qwen2', 11));

  it('a pre-norm decoder layer with q/k RMSNorm (Qwen3 shape)', () => checkBlock('qwen3', 12));

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
