/**
 * The shared-prefix scoring graph computes exactly what the plain one does — log-probs,
 * entropies, values, and the gradients of a loss on them with respect to every weight — while
 * running the common prefix of the batch once.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { grad } from '#trainer/foundations/engine/autodiff';
import * as op from '#trainer/foundations/engine/ops';
import { runGraphOnce } from '#trainer/foundations/engine/runtime/run';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { packForScoring, packWithSharedPrefix, sharedPrefixLength } from '#trainer/foundations/models/batch';
import { parseModelConfig } from '#trainer/foundations/models/modelConfig';
import { buildScoringGraph, VALUE_HEAD } from '#trainer/foundations/models/scoring';
import { expectedTensors } from '#trainer/foundations/models/weights';
import { f64, seeded } from '../../helpers/engine';

const config = parseModelConfig(
  {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: 19,
    hidden_size: 8,
    intermediate_size: 12,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 4,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 64,
    hidden_act: 'silu',
  },
  'shared/config.json',
);

const sequences = [
  [1, 2, 3, 4, 5, 9, 9, 10, 11],
  [1, 2, 3, 4, 5, 7, 8],
  [1, 2, 3, 4, 5, 6, 12, 13, 14, 15],
];
const marks = sequences.map((s) => Uint8Array.from(s, (_, t) => (t >= 6 ? 1 : 0)));

/** Per-token outputs and d(loss)/d(weights), from the plain or the shared-prefix graph, in full-sequence coordinates. */
async function evaluate(
  shared: boolean,
): Promise<{ logprobs: number[][]; entropy: number[][]; values: number[][]; grads: Record<string, Float64Array> }> {
  const r = seeded(3);
  const weights: Record<string, HostTensor> = {};
  for (const t of expectedTensors(config))
    weights[t.name] = f64(t.shape, r, t.role === 'norm' ? 0.2 : 0.4, t.role === 'norm' ? 1 : 0);
  weights[VALUE_HEAD.weight] = f64([1, 8], r, 0.4);
  weights[VALUE_HEAD.bias] = f64([1], r, 0.4);
  const packed = shared ? packWithSharedPrefix(sequences, marks) : packForScoring(sequences, marks);
  const scoring = buildScoringGraph(config, { dtype: 'float64', entropy: true, valueHead: true, sharedPrefix: shared });
  const g = scoring.graph;
  // A loss over everything the graph outputs, so gradients reach every path.
  const loss = op.add(
    op.reduceSum(op.mul(scoring.logprobs, scoring.logprobs)),
    op.add(op.reduceSum(scoring.entropy!), op.reduceSum(op.mul(scoring.values!, scoring.values!))),
  );
  const names = [...scoring.weights.used.keys()];
  const grads = grad(
    loss,
    names.map((n) => scoring.weights.used.get(n)!),
  );
  g.output(scoring.logprobs, 'logprobs');
  g.output(scoring.entropy!, 'entropy');
  g.output(scoring.values!, 'values');
  grads.forEach((d, i) => g.output(d, `d/${names[i]}`));
  const out = await runGraphOnce(
    g,
    {
      ...packed.feeds,
      ...weights,
      inv_temperature: { dtype: 'float64', shape: [], data: Float64Array.of(1.1) },
    } as Record<string, HostTensor>,
    { provider: 'cpu', optimization: 'basic' },
  );
  const unpack = (data: Float64Array) =>
    sequences.map((seq, b) =>
      Array.from(seq, (_, t) => (t < packed.prefix ? 0 : data[b * packed.length + t - packed.prefix])),
    );
  return {
    logprobs: unpack(out.logprobs.data as Float64Array),
    entropy: unpack(out.entropy.data as Float64Array),
    values: unpack(out.values.data as Float64Array),
    grads: Object.fromEntries(names.map((n) => [n, out[`d/${n}`].data as Float64Array])),
  };
}

describe('shared-prefix scoring', () => {
  it('finds the longest prefix clear of scored tokens', () => {
    assert.equal(sharedPrefixLength(sequences, marks), 5);
    assert.equal(sharedPrefixLength(sequences), 0, 'without marks every token after the first is scored');
    assert.equal(
      sharedPrefixLength(
        [
          [4, 4, 4],
          [4, 4, 4],
        ],
        [Uint8Array.of(0, 0, 1), Uint8Array.of(0, 0, 1)],
      ),
      1,
    );
  });

  it('matches the plain graph: outputs and every weight gradient', async () => {
    const plain = await evaluate(false);
    const shared = await evaluate(true);
    const close = (a: number, b: number, what: string) =>
      assert.ok(Math.abs(a - b) <= 1e-10 * Math.max(1, Math.abs(a)), `${what}: ${a} vs ${b}`);
    for (const key of ['logprobs', 'entropy', 'values'] as const) {
      plain[key].forEach((row, b) =>
        row.forEach((v, t) => marks[b][t] && close(v, shared[key][b][t], `${key}[${b}][${t}]`)),
      );
    }
    assert.ok(plain.logprobs[0][6] < 0, 'the scored log-probs are real');
    for (const [name, d] of Object.entries(plain.grads)) {
      const s = shared.grads[name];
      let worst = 0;
      let scale = 0;
      for (let i = 0; i < d.length; i++) {
        worst = Math.max(worst, Math.abs(d[i] - s[i]));
        scale = Math.max(scale, Math.abs(d[i]));
      }
      assert.ok(scale > 0, `${name}: the gradient is not zero`);
      assert.ok(worst <= 1e-10 * scale, `${name}: gradients differ by ${worst} (scale ${scale})`);
    }
  });
});
