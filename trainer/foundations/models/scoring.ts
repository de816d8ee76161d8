import { Graph, type Tensor } from '../engine/graph';
import * as op from '../engine/ops';
import type { ModelConfig } from './modelConfig';
import {
  decoderSegments,
  decoderTrunk,
  lmHeadLogits,
  sharedPrefixCore,
  WeightInputs,
  type ComputeDtype,
} from './decoder';
import { fusedLinear, type FusedKernels } from './layers/fused';
import { linear } from './layers/linear';
import type { LoraConfig } from './lora';
import type { QuantizedBase } from './quantized/quantizedWeights';
import { logitMask } from './logitMask';
import { segmentImages } from './vision/graphInputs';

/**
 * The scoring graph: per-token log-probs of given token sequences under the policy
 * log softmax(logits · inv_temperature), and optionally the entropy of that distribution and a
 * critic value, for the tokens listed in `score_tokens` only. The LM head and the softmax over
 * the vocabulary run for those positions and nowhere else: prompt, template and tool-result
 * tokens (most of an agent trajectory) never materialise a vocabulary-sized row.
 *
 * Inputs: ids, positions, key_mask [B, T]; score_tokens int64 [N] — flat indices b·T + j of
 * the tokens to score (j ≥ 1: token j is predicted from position j − 1); inv_temperature [].
 * Outputs are [B, T], aligned with the tokens, zero where not scored.
 */
export interface ScoringGraphOptions {
  dtype: ComputeDtype;
  lora?: LoraConfig | undefined;
  /** A quantized base (ModelRuntime.quantized): its matrices are read through MatMulNBits. */
  quantized?: QuantizedBase | undefined;
  entropy?: boolean | undefined;
  /** Add a scalar value head (PPO's critic): inputs `v_head.summary.weight` [1, hidden] and `.bias` [1]. */
  valueHead?: boolean | undefined;
  /**
   * The batch's sequences begin with a common prefix given once as `prefix_ids` and
   * `prefix_positions` [1, P]; `ids` etc. hold what follows it (see packForScoring). Scored
   * tokens are in the suffixes, never the first token of one.
   */
  sharedPrefix?: boolean | undefined;
  /** Forward only (old, reference and sampling log-probs): onnxruntime's fused kernels; no gradient. See DecoderOptions.fused. */
  fused?: FusedKernels | undefined;
  /**
   * Also output `argmaxGap`: the largest logit minus the target's logit, 0 exactly where the
   * target is the greedy choice — so teacher-forced exact match (what greedy decoding would copy)
   * is one forward pass.
   */
  argmaxGap?: boolean | undefined;
  /**
   * Also output `greedy`: the greedy choice's token id at each scored position, as a float (exact
   * for any vocabulary under 2²⁴), so a check can show what the model would have written instead.
   */
  greedy?: boolean | undefined;
  /**
   * Constrained positions (schema-constrained tool calls): inputs `logit_bias` [K, V] and
   * `bias_row` [N], each scored token's bias row added to its scaled logits (constraintBias.ts),
   * so log-probs and entropies are those of the distribution the tokens were sampled from.
   */
  constrained?: boolean | undefined;
  /** Recompute each layer's activations in the backward pass (DecoderOptions.checkpointLayers). */
  checkpointLayers?: boolean | undefined;
}

/** A scoring graph loaded on a device: its session id and the weight inputs each run feeds. */
export interface ScoringSession {
  id: number;
  weights: ScoringGraph['weights'];
}

export interface ScoringGraph {
  graph: Graph;
  weights: WeightInputs;
  logprobs: Tensor;
  entropy?: Tensor;
  values?: Tensor;
  argmaxGap?: Tensor;
  greedy?: Tensor;
  inputs: { ids: Tensor; positions: Tensor; keyMask: Tensor; scoreTokens: Tensor; invTemperature: Tensor };
}

export const VALUE_HEAD = { weight: 'v_head.summary.weight', bias: 'v_head.summary.bias' } as const;

/** The token inputs and the normed hidden states every scoring graph starts from. */
function scoringTrunk(
  g: Graph,
  config: ModelConfig,
  weights: WeightInputs,
  options: Pick<ScoringGraphOptions, 'dtype' | 'lora' | 'sharedPrefix' | 'fused' | 'checkpointLayers'>,
) {
  const dtype = options.dtype;
  const ids = g.input('ids', 'int64', ['B', 'T']);
  // Vision-language models: M-RoPE positions [B, T, 3], and the images of the batch (see addVisionFeeds).
  const positionAxes = config.vision ? [3] : [];
  const positions = g.input('positions', 'int64', ['B', 'T', ...positionAxes]);
  const keyMask = g.input('key_mask', 'int64', ['B', 'T']);
  const scoreTokens = g.input('score_tokens', 'int64', ['N']);
  const invTemperature = g.input('inv_temperature', dtype, []);
  const images = config.vision ? segmentImages(g, config, weights, dtype, !!options.sharedPrefix) : undefined;
  let hidden: Tensor;
  if (options.sharedPrefix) {
    const prefixIds = g.input('prefix_ids', 'int64', [1, 'P']);
    const prefix = {
      ids: prefixIds,
      positions: g.input('prefix_positions', 'int64', [1, 'P', ...positionAxes]),
      keyMask: op.fullLike(prefixIds, 1),
      images: images?.prefix,
    };
    const suffix = { ids, positions, keyMask, images: images?.rows };
    hidden = decoderSegments(
      g,
      config,
      weights,
      [prefix, suffix],
      { dtype, lora: options.lora, fused: options.fused, checkpointLayers: options.checkpointLayers },
      sharedPrefixCore(prefix, suffix, dtype),
    )[1];
  } else
    hidden = decoderTrunk(
      g,
      config,
      weights,
      { ids, positions, keyMask, images: images?.rows },
      { dtype, lora: options.lora, fused: options.fused, checkpointLayers: options.checkpointLayers },
    );
  const flatHidden = op.reshape(hidden, [-1, config.hiddenSize]); // [B·T, H]
  // Token j is predicted (and valued) from position j − 1.
  const h = g.withScope('score', () => op.gather(flatHidden, op.sub(scoreTokens, g.constant([1], 'int64', [])), 0)); // [N, H]
  /** Per-token values [N] back to [B, T], zero where not scored. */
  const place = (perToken: Tensor) =>
    op.reshapeTo(
      op.scatterND(op.fullLike(op.reshape(ids, [-1]), 0, dtype), op.unsqueeze(scoreTokens, [-1]), perToken),
      op.shapeOf(ids),
      ['B', 'T'],
    );
  return { h, place, inputs: { ids, positions, keyMask, scoreTokens, invTemperature } };
}

function valueHead(config: ModelConfig, weights: WeightInputs, h: Tensor): Tensor {
  return op.squeeze(
    linear(h, weights.get(VALUE_HEAD.weight, [1, config.hiddenSize]), weights.get(VALUE_HEAD.bias, [1])),
    [-1],
  );
}

export function buildScoringGraph(config: ModelConfig, options: ScoringGraphOptions, name = 'score'): ScoringGraph {
  const g = new Graph(name);
  const weights = new WeightInputs(g, options.dtype, undefined, options.quantized);
  const { h, place, inputs } = scoringTrunk(g, config, weights, options);
  const out = g.withScope('score', () => {
    const scaled = op.mul(
      lmHeadLogits(config, weights, h, options.fused?.transposedMatMul ? fusedLinear : linear, { chunked: true }),
      inputs.invTemperature,
    ); // [N, V]
    const masked = logitMask(g, config, options.dtype);
    let logits = masked ? op.add(scaled, masked) : scaled;
    if (options.constrained) {
      const bias = g.input('logit_bias', options.dtype, ['K', config.vocabSize]);
      logits = op.add(logits, op.gather(bias, g.input('bias_row', 'int64', ['N']), 0));
    }
    // log p(target) = logit(target) − logsumexp(logits): no [N, V] log-probability matrix.
    const lse = op.reduceLogSumExp(logits, [-1], true); // [N, 1]
    const targets = op.gather(op.reshape(inputs.ids, [-1]), inputs.scoreTokens, 0); // [N]
    const picked = op.squeeze(op.sub(op.gatherElements(logits, op.unsqueeze(targets, [-1]), 1), lse), [-1]);
    const result: { logprobs: Tensor; entropy?: Tensor; values?: Tensor; argmaxGap?: Tensor; greedy?: Tensor } = {
      logprobs: place(picked),
    };
    if (options.argmaxGap) {
      const targetLogit = op.squeeze(op.gatherElements(logits, op.unsqueeze(targets, [-1]), 1), [-1]);
      result.argmaxGap = place(op.sub(op.squeeze(op.reduceMax(logits, [-1], true), [-1]), targetLogit));
    }
    if (options.greedy) result.greedy = place(op.cast(op.argMax(logits, -1), options.dtype));
    if (options.entropy) {
      // H = lse − Σ softmax · logits
      const probs = op.exp(op.sub(logits, lse));
      result.entropy = place(op.squeeze(op.sub(lse, op.reduceSum(op.mul(probs, logits), [-1], true)), [-1]));
    }
    if (options.valueHead) result.values = place(valueHead(config, weights, h));
    return result;
  });
  return { graph: g, weights, ...out, inputs };
}

export interface ValueGraphOptions {
  dtype: ComputeDtype;
  lora?: LoraConfig | undefined;
  quantized?: QuantizedBase | undefined;
  sharedPrefix?: boolean | undefined;
  /** The graph input (and device state) name of each weight, e.g. `critic/…` for a critic of its own. */
  inputName?: ((name: string) => string) | undefined;
  /** Recompute each layer's activations in the backward pass (DecoderOptions.checkpointLayers). */
  checkpointLayers?: boolean | undefined;
}

/**
 * A critic's graph: the same trunk and token inputs as the scoring graph, and only a value head
 * on top — no LM head, no softmax over the vocabulary. `values` [B, T] is the value of each
 * scored token's state (predicted from the position before it), zero elsewhere.
 */
export function buildValueGraph(
  config: ModelConfig,
  options: ValueGraphOptions,
  name = 'value',
): { graph: Graph; weights: WeightInputs; values: Tensor; inputs: ScoringGraph['inputs'] } {
  const g = new Graph(name);
  const weights = new WeightInputs(g, options.dtype, options.inputName, options.quantized);
  const { h, place, inputs } = scoringTrunk(g, config, weights, options);
  const values = g.withScope('value', () => place(valueHead(config, weights, h)));
  return { graph: g, weights, values, inputs };
}
