import { Graph, type Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import type { ModelConfig } from '../modelConfig';
import { decoderTrunk, lmHeadLogits, visibleKeys, WeightInputs, type AttentionCore } from '../decoder';
import { groupScores, maskBias, mixValues } from '../layers/attention';
import { fusedLinear, type FusedKernels } from '../layers/fused';
import { linear } from '../layers/linear';
import type { QuantizedBase } from '../quantized/quantizedWeights';
import type { LoraConfig } from '../lora';
import { logitMask } from '../logitMask';

/**
 * The generation graph: extends every sequence of a batch by S tokens (a prompt, tool results,
 * or the one token sampled last) against its KV cache, and samples the next token in-graph.
 *
 * The cache of each layer is two blocks: `base` [B, kv, Pb, hd], rebuilt rarely, and `recent`
 * [B, kv, Pr, hd], which this graph returns extended by the new tokens. Attention scores are
 * computed per block and joined before the softmax, so the large base block is read but never
 * copied — onnxruntime-node copies every graph output, and returning the whole cache each step
 * would make generation quadratic in length.
 *
 * Padding slots (key mask 0) keep all rows of the batch on one timeline: a row that appends
 * fewer tokens is left-padded inside the chunk, a row that is not generating gets a padding
 * slot. Masked keys get exactly zero attention weight, so padding changes no result.
 */
export type SamplingMode =
  /** The most likely token. */
  | { kind: 'greedy' }
  /** Sample from the whole (temperature-scaled) distribution. */
  | { kind: 'full' }
  /** Sample among the `candidates` most likely tokens, then within the top-p nucleus of those. */
  | { kind: 'sorted'; candidates: number };

export interface GenerationGraphOptions {
  lora?: LoraConfig | undefined;
  /** A quantized base (ModelRuntime.quantized): its matrices are read through MatMulNBits. */
  quantized?: QuantizedBase | undefined;
  sampling: SamplingMode;
  /** Also output the whole next-token log-distribution [B, V] (tests, debugging). */
  returnDistribution?: boolean | undefined;
  /** The fused kernels of the provider the graph runs on (fusedKernelsFor). */
  fused: FusedKernels;
  /**
   * Constrained sampling (schema-constrained tool calls): inputs `logit_bias` [K, V] and
   * `bias_row` [B], each row's bias added to its scaled logits (see constraintBias.ts).
   */
  constrained?: boolean | undefined;
}

export const cacheName = (block: 'base' | 'recent', kind: 'key' | 'value', layer: number) =>
  `${block}_${kind}_${layer}`;

export function buildGenerationGraph(
  config: ModelConfig,
  options: GenerationGraphOptions,
): { graph: Graph; weights: WeightInputs } {
  const g = new Graph(
    `generate_${options.sampling.kind}${options.sampling.kind === 'sorted' ? options.sampling.candidates : ''}${options.constrained ? '_constrained' : ''}`,
  );
  const dtype = 'float32';
  const kv = config.numKvHeads;
  const hd = config.headDim;
  const ids = g.input('ids', 'int64', ['B', 'S']);
  // Vision-language models: M-RoPE positions, and the image embeddings of the chunk (encoded by the vision graph).
  const positions = g.input('positions', 'int64', config.vision ? ['B', 'S', 3] : ['B', 'S']);
  const images = config.vision
    ? {
        values: g.input('image_embeds', dtype, ['image_tokens', config.hiddenSize]),
        slots: g.input('image_slots', 'int64', ['image_tokens']),
      }
    : undefined;
  const newMask = g.input('new_mask', 'int64', ['B', 'S']);
  const baseMask = g.input('base_mask', 'int64', ['B', 'Pb']);
  const recentMask = g.input('recent_mask', 'int64', ['B', 'Pr']);
  const invTemperature = g.input('inv_temperature', dtype, []);
  const uniforms = g.input('uniforms', dtype, ['B']);
  const topP = g.input('top_p', dtype, []);
  const cache = Array.from({ length: config.numLayers }, (_, l) => ({
    baseKey: g.input(cacheName('base', 'key', l), dtype, ['B', kv, 'Pb', hd]),
    baseValue: g.input(cacheName('base', 'value', l), dtype, ['B', kv, 'Pb', hd]),
    recentKey: g.input(cacheName('recent', 'key', l), dtype, ['B', kv, 'Pr', hd]),
    recentValue: g.input(cacheName('recent', 'value', l), dtype, ['B', kv, 'Pr', hd]),
  }));
  const baseBias = maskBias(op.cast(op.unsqueeze(baseMask, [1, 2, 3]), 'bool'), dtype); // [B,1,1,1,Pb]
  const recentBias = maskBias(op.cast(op.unsqueeze(recentMask, [1, 2, 3]), 'bool'), dtype);
  const newBias = maskBias(visibleKeys(newMask, ids), dtype); // [B,1,1,S,S]

  const core: AttentionCore = (layer, q, k, v) => {
    const c = cache[layer];
    const blocks = [
      op.add(groupScores(q, c.baseKey), baseBias),
      op.add(groupScores(q, c.recentKey), recentBias),
      op.add(groupScores(q, k), newBias),
    ];
    const probs = op.softmax(op.concat(blocks, -1), -1);
    const [pBase, pRecent, pNew] = op.splitBy(
      probs,
      op.concat([op.shapeOf(c.baseKey, 2, 3), op.shapeOf(c.recentKey, 2, 3), op.shapeOf(k, 2, 3)], 0),
      blocks.map((b) => b.shape),
      -1,
    );
    g.output(op.concat([c.recentKey, k], 2), `${cacheName('recent', 'key', layer)}.next`);
    g.output(op.concat([c.recentValue, v], 2), `${cacheName('recent', 'value', layer)}.next`);
    return op.add(op.add(mixValues(pBase, c.baseValue), mixValues(pRecent, c.recentValue)), mixValues(pNew, v));
  };

  const weights = new WeightInputs(g, dtype, undefined, options.quantized);
  const hidden = decoderTrunk(
    g,
    config,
    weights,
    { ids, positions, keyMask: newMask, images },
    { dtype, lora: options.lora, fused: options.fused },
    core,
  );
  g.withScope('sample', () => {
    const last = op.squeeze(op.slice(hidden, { starts: [-1], ends: [Number.MAX_SAFE_INTEGER], axes: [1] }), [1]); // [B, H]
    // FusedMatMul where the provider has it: at batch 1 it reads the [V, hidden] head faster than Gemm (measured 4–7 against 6–7 ms for 32000 × 512, one thread).
    const head = options.fused.transposedMatMul ? fusedLinear : linear;
    const scaled = op.mul(lmHeadLogits(config, weights, last, head), invTemperature); // [B, V]
    const masked = logitMask(g, config, dtype);
    let logits = masked ? op.add(scaled, masked) : scaled;
    if (options.constrained) {
      const bias = g.input('logit_bias', dtype, ['K', config.vocabSize]);
      logits = op.add(logits, op.gather(bias, g.input('bias_row', 'int64', ['B']), 0));
    }
    const logProbs = op.logSoftmax(logits, -1);
    const token = sampleToken(logProbs, uniforms, topP, options.sampling);
    g.output(token, 'token');
    g.output(op.squeeze(op.gatherElements(logProbs, op.unsqueeze(token, [-1]), 1), [-1]), 'logprob');
    g.output(op.neg(op.reduceSum(op.mul(op.exp(logProbs), logProbs), [-1])), 'entropy');
    if (options.returnDistribution) g.output(logProbs, 'distribution');
  });
  return { graph: g, weights };
}

/**
 * Inverse-CDF sampling with one uniform per row: the first index whose cumulative probability
 * exceeds u·total. `sorted` keeps the top candidates, then the smallest prefix whose mass
 * reaches top_p (the most likely token is always kept).
 */
function sampleToken(logProbs: Tensor, uniforms: Tensor, topP: Tensor, mode: SamplingMode): Tensor {
  if (mode.kind === 'greedy') return op.argMax(logProbs, -1);
  const pick = (probs: Tensor) => {
    const cdf = op.cumSum(probs, -1);
    const total = op.slice(cdf, { starts: [-1], ends: [Number.MAX_SAFE_INTEGER], axes: [-1] }); // [B, 1]
    const threshold = op.mul(op.unsqueeze(uniforms, [-1]), total);
    // Counted in float32 (exact below 2^24 entries) and cast after the sum: an int64 [B, V] sum has
    // no WebGPU kernel, and running it on the CPU would copy [B, V] to the host every step.
    const index = op.cast(op.reduceSum(op.cast(op.lessOrEqual(cdf, threshold), 'float32'), [-1]), 'int64'); // [B]
    const lastIndex = op.sub(op.cast(op.shapeOf(probs, 1, 2), 'int64'), logProbs.graph.int64s([1]));
    return op.minimum(index, op.reshape(lastIndex, []));
  };
  if (mode.kind === 'full') return pick(op.exp(logProbs));
  const { values, indices } = op.topK(logProbs, mode.candidates);
  const probs = op.exp(values);
  const before = op.cumSum(probs, -1, true);
  const kept = op.where(op.less(before, op.unsqueeze(topP, [0])), probs, 0);
  const choice = pick(kept);
  return op.squeeze(op.gatherElements(indices, op.unsqueeze(choice, [-1]), 1), [-1]);
}
