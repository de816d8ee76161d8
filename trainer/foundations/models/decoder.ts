import type { DType } from '../engine/dtype';
import type { Graph, Tensor } from '../engine/graph';
import * as op from '../engine/ops';
import { ropeInverseFrequencies, type ModelConfig } from './modelConfig';
import { groupScores, maskBias, mixValues } from './layers/attention';
import { linear } from './layers/linear';
import { rmsNorm } from './layers/norm';
import {
  fusedAddRmsNorm,
  fusedLinear,
  fusedRmsNorm,
  fusedRotary,
  rotaryCache,
  type FusedKernels,
  type RotaryCache,
} from './layers/fused';
import { applyRotary, mropeTables, rotaryTables, type RotaryTables } from './layers/rotary';
import { loraTensorNames, type LoraConfig } from './lora';
import { quantizedShapes, quantizedStateNames, type QuantizedBase } from './quantized/quantizedWeights';

/**
 * The decoder of every supported family (Qwen2/2.5, Qwen3, Llama incl. SmolLM2) as graph
 * nodes, parameterised by the normalised config: grouped-query attention, rotary embeddings
 * with the family's scaling, RMSNorm, SwiGLU, optional q/k/v (and o, MLP) biases, Qwen3's
 * per-head q/k norms, tied or separate LM head. Weights are graph inputs named by their
 * Hugging Face names, fed from device state, so every graph of a run shares one copy.
 */
export type ComputeDtype = 'float32' | 'float64';

export interface DecoderOptions {
  dtype: ComputeDtype;
  /** LoRA adapters: adds inputs for A and B of each targeted projection, and a `lora_scale` input (0 turns them off: the reference policy). */
  lora?: LoraConfig | undefined;
  /**
   * Forward only: onnxruntime's fused kernels (layers/fused) for the norms, residual adds, rotary
   * embeddings and — where the provider has it — the projections. Float32 only; no gradient.
   */
  fused?: FusedKernels | undefined;
  /**
   * Each decoder layer is a checkpointed segment (Graph.checkpoint): a backward pass keeps the
   * residual stream between layers and recomputes each layer's activations as it reaches the
   * layer. Rule: the backward then holds one layer's activations instead of every layer's, for
   * about one more forward pass of time.
   */
  checkpointLayers?: boolean | undefined;
}

/**
 * Weights as graph inputs, created on first use; remembers which names the graph reads. `used` is
 * keyed by the Hugging Face name; the input itself is named `inputName(name)` — the same name by
 * default, another where a second network lives on the same device (the critic's `critic/…`).
 */
export class WeightInputs {
  readonly used = new Map<string, Tensor>();
  constructor(
    private readonly g: Graph,
    private readonly dtype: ComputeDtype,
    private readonly inputName: (name: string) => string = (name) => name,
    /** A quantized base: its quantized weights are read as codes and scales (quantizedMatrix). */
    readonly quantized?: QuantizedBase | undefined,
  ) {}

  get(name: string, shape: readonly number[]): Tensor {
    return this.input(name, this.dtype, shape);
  }

  /** The weight's codes and scales when the base stores it quantized; undefined when it is float. */
  quantizedMatrix(name: string): op.QuantizedMatrix | undefined {
    const layout = this.quantized?.layouts.get(name);
    if (!layout) return undefined;
    const names = quantizedStateNames(name);
    const shapes = quantizedShapes(layout);
    return {
      data: this.input(names.data, 'uint8', shapes.data),
      scales: this.input(names.scales, 'float32', shapes.scales),
      ...layout,
    };
  }

  private input(name: string, dtype: DType, shape: readonly number[]): Tensor {
    let t = this.used.get(name);
    if (!t) {
      t = this.g.input(this.inputName(name), dtype, shape);
      this.used.set(name, t);
    }
    return t;
  }
}

/**
 * x · Wᵀ (+ b) for the weight named `name` [out, in]: MatMulNBits over its codes where the base is
 * quantized (a float64 graph, which the kernel lacks, multiplies by the dequantized matrix: the
 * same values), else the float projection `project`.
 */
export function weightProjection(
  x: Tensor,
  name: string,
  shape: readonly [number, number],
  w: WeightInputs,
  project: (x: Tensor, weight: Tensor, bias?: Tensor) => Tensor,
  bias?: Tensor,
): Tensor {
  const q = w.quantizedMatrix(name);
  if (!q) return project(x, w.get(name, shape), bias);
  const y =
    x.dtype === 'float32'
      ? op.matMulNBits(x, q, w.quantized!.accuracyLevel)
      : linear(x, op.dequantizeMatrix(q, 'float64'));
  return bias ? op.add(y, bias) : y;
}

/** Runtime inputs every decoder graph takes: token ids, rotary positions and the padding mask. */
export interface DecoderInputs {
  ids: Tensor;
  /** [B, T], or [B, T, 3] (temporal, height, width) for a vision-language model's M-RoPE. */
  positions: Tensor;
  /** [B, T]: 1 for real tokens (used by the default attention core). */
  keyMask: Tensor;
  /** Vision-language models: embeddings [M, hidden] that replace the token embeddings at flat slots b·T + t [M]. */
  images?: { values: Tensor; slots: Tensor } | undefined;
}

/**
 * How a layer's queries meet keys and values. Given the layer index and q [B, kv, group, T, hd]
 * (already scaled by 1/√hd), k and v [B, kv, T, hd] (rotated), return the attention output
 * [B, kv, group, T, hd]. The plain core attends causally within the sequence; the generation
 * graph's core also attends to cached keys and values.
 */
export type AttentionCore = (layer: number, q: Tensor, k: Tensor, v: Tensor) => Tensor;

/** Causal attention within the sequence, padding keys masked (the training and scoring graphs). */
export function causalCore(keyMask: Tensor, ids: Tensor, dtype: ComputeDtype): AttentionCore {
  const bias = maskBias(visibleKeys(keyMask, ids), dtype);
  return (_layer, q, k, v) => mixValues(op.softmax(op.add(groupScores(q, k), bias), -1), v);
}

function adaptedLinear(
  x: Tensor,
  module: string,
  out: number,
  inputs: number,
  bias: boolean,
  w: WeightInputs,
  ctx: DecoderContext,
): Tensor {
  const g = x.graph;
  const project = ctx.fused?.transposedMatMul ? fusedLinear : linear;
  let y = weightProjection(
    x,
    `${module}.weight`,
    [out, inputs],
    w,
    project,
    bias ? w.get(`${module}.bias`, [out]) : undefined,
  );
  const target = module.split('.').pop()!;
  if (ctx.lora && ctx.lora.targets.includes(target as never)) {
    const names = loraTensorNames(module);
    const a = w.get(names.a, [ctx.lora.rank, inputs]);
    const b = w.get(names.b, [out, ctx.lora.rank]);
    const delta = g.withScope('lora', () => project(project(x, a), b));
    y = op.add(y, op.mul(delta, ctx.loraScale!));
  }
  return y;
}

interface DecoderContext {
  config: ModelConfig;
  dtype: ComputeDtype;
  lora?: LoraConfig | undefined;
  loraScale?: Tensor | undefined;
  fused?: FusedKernels | undefined;
}

/** Rotary tables of one token segment: cos/sin per token (plain) or per position (fused kernel). */
type Rotary = { plain: RotaryTables } | { fused: RotaryCache };

function norm(x: Tensor, weight: Tensor, eps: number, ctx: DecoderContext): Tensor {
  return ctx.fused ? fusedRmsNorm(x, weight, eps) : rmsNorm(x, weight, eps);
}

/** h + delta and its RMSNorm (just the norm when there is nothing to add yet): the residual stream's step. */
function addAndNorm(
  h: Tensor,
  delta: Tensor | undefined,
  weight: Tensor,
  eps: number,
  ctx: DecoderContext,
): { sum: Tensor; normed: Tensor } {
  if (!delta) return { sum: h, normed: norm(h, weight, eps, ctx) };
  if (ctx.fused) return fusedAddRmsNorm(h, delta, weight, eps);
  const sum = op.add(h, delta);
  return { sum, normed: rmsNorm(sum, weight, eps) };
}

/** [B, T, heads·hd] → [B, heads, T, hd] */
function splitHeads(t: Tensor, heads: number, headDim: number): Tensor {
  const [B, T] = t.shape;
  return op.transpose(op.reshape(t, [B, T, heads, headDim]), [0, 2, 1, 3]);
}

interface Projected {
  /** Queries scaled by 1/√hd, viewed per key/value group: [B, kv, group, T, hd]. */
  q: Tensor;
  /** Rotated keys and values: [B, kv, T, hd]. */
  k: Tensor;
  v: Tensor;
}

function project(x: Tensor, layer: string, w: WeightInputs, ctx: DecoderContext, rotary: Rotary): Projected {
  const g = x.graph;
  const c = ctx.config;
  const hd = c.headDim;
  const group = c.numHeads / c.numKvHeads;
  const [B] = x.shape;
  let q = splitHeads(
    g.withScope('q_proj', () => adaptedLinear(x, `${layer}.q_proj`, c.numHeads * hd, c.hiddenSize, c.qkvBias, w, ctx)),
    c.numHeads,
    hd,
  );
  let k = splitHeads(
    g.withScope('k_proj', () =>
      adaptedLinear(x, `${layer}.k_proj`, c.numKvHeads * hd, c.hiddenSize, c.qkvBias, w, ctx),
    ),
    c.numKvHeads,
    hd,
  );
  const v = splitHeads(
    g.withScope('v_proj', () =>
      adaptedLinear(x, `${layer}.v_proj`, c.numKvHeads * hd, c.hiddenSize, c.qkvBias, w, ctx),
    ),
    c.numKvHeads,
    hd,
  );
  if (c.qkNorm) {
    q = g.withScope('q_norm', () => norm(q, w.get(`${layer}.q_norm.weight`, [hd]), c.rmsNormEps, ctx));
    k = g.withScope('k_norm', () => norm(k, w.get(`${layer}.k_norm.weight`, [hd]), c.rmsNormEps, ctx));
  }
  const rotate = (t: Tensor) => ('fused' in rotary ? fusedRotary(t, rotary.fused) : applyRotary(t, rotary.plain));
  q = rotate(q);
  k = rotate(k);
  return { q: op.reshape(op.mul(q, 1 / Math.sqrt(hd)), [B, c.numKvHeads, group, -1, hd]), k, v };
}

/** Attention output [B, kv, group, T, hd] back to [B, T, hidden] through o_proj. */
function outputProjection(context: Tensor, x: Tensor, layer: string, w: WeightInputs, ctx: DecoderContext): Tensor {
  const g = x.graph;
  const c = ctx.config;
  const hd = c.headDim;
  const [B, T] = x.shape;
  const merged = op.reshape(op.transpose(op.reshape(context, [B, c.numHeads, T, hd]), [0, 2, 1, 3]), [
    B,
    T,
    c.numHeads * hd,
  ]);
  return g.withScope('o_proj', () =>
    adaptedLinear(merged, `${layer}.o_proj`, c.hiddenSize, c.numHeads * hd, c.oProjBias, w, ctx),
  );
}

function mlp(x: Tensor, layer: string, w: WeightInputs, ctx: DecoderContext): Tensor {
  const g = x.graph;
  const c = ctx.config;
  const gate = g.withScope('gate_proj', () =>
    adaptedLinear(x, `${layer}.gate_proj`, c.intermediateSize, c.hiddenSize, c.mlpBias, w, ctx),
  );
  const up = g.withScope('up_proj', () =>
    adaptedLinear(x, `${layer}.up_proj`, c.intermediateSize, c.hiddenSize, c.mlpBias, w, ctx),
  );
  const hidden = op.mul(op.mul(gate, op.sigmoid(gate)), up);
  return g.withScope('down_proj', () =>
    adaptedLinear(hidden, `${layer}.down_proj`, c.hiddenSize, c.intermediateSize, c.mlpBias, w, ctx),
  );
}

/**
 * Which keys each new query may see: key j (of P earlier + T new) is visible from new query i
 * when j ≤ P + i and key j is a real token. Bool [B, 1, 1, T, P+T].
 */
export function visibleKeys(keyMask: Tensor, newTokens: Tensor): Tensor {
  const g = keyMask.graph;
  return g.withScope('attention_mask', () => {
    const total = op.shapeOf(keyMask, 1, 2); // P + T
    const fresh = op.shapeOf(newTokens, 1, 2); // T
    const past = op.sub(total, fresh);
    const ones = op.expand(g.scalar(1, 'int32'), op.concat([fresh, total], 0), [newTokens.shape[1], keyMask.shape[1]]);
    const causal = op.cast(op.trilu(ones, false, op.reshape(past, [])), 'bool');
    const real = op.cast(op.unsqueeze(keyMask, [1, 2, 3]), 'bool');
    return op.and(causal, real);
  });
}

/**
 * How the token segments of a graph attend, layer by layer: given each segment's projections,
 * return each segment's attention output [B, kv, group, T, hd]. A single segment with causal
 * attention is the usual case; the shared-prefix training graph has two (sharedPrefixCore).
 */
export type SegmentCore = (layer: number, segments: readonly Projected[]) => Tensor[];

/**
 * The transformer trunk over one or more token segments that share the weights: embeddings →
 * layers → final norm, returning each segment's normed hidden states [B, T, hidden]. Position-wise
 * work (projections, norms, MLP) runs per segment; `core` decides what attends to what.
 */
export function decoderSegments(
  g: Graph,
  config: ModelConfig,
  weights: WeightInputs,
  segments: readonly DecoderInputs[],
  options: DecoderOptions,
  core: SegmentCore,
): Tensor[] {
  const fused = options.fused;
  if (fused && options.dtype !== 'float32') throw new Error('fused decoder graphs are float32 only');
  const ctx: DecoderContext = { config, dtype: options.dtype, lora: options.lora, fused };
  if (options.lora) ctx.loraScale = g.input('lora_scale', options.dtype, []);
  const frequencies = Float64Array.from(ropeInverseFrequencies(config), (f) => Math.fround(f));
  const section = config.mropeSection;
  // M-RoPE (vision-language models) rotates by three position axes, which the fused kernel does not.
  const rotary: Rotary[] = segments.map((s) =>
    section
      ? { plain: mropeTables(s.positions, frequencies, section, options.dtype) }
      : fused
        ? { fused: rotaryCache(s.positions, frequencies) }
        : { plain: rotaryTables(s.positions, frequencies, options.dtype) },
  );
  const eps = config.rmsNormEps;
  // The residual stream, and the MLP output not yet added to it (added together with the next norm).
  let hs = segments.map((s) =>
    g.withScope('embed_tokens', () => withImages(embedTokens(config, weights, s.ids, options.dtype), s.images)),
  );
  let pending: Tensor[] | undefined;
  const eachLayer = options.checkpointLayers
    ? (build: () => void) => g.checkpoint(build)
    : (build: () => void) => build();
  for (let i = 0; i < config.numLayers; i++) {
    const layer = `model.layers.${i}`;
    eachLayer(() =>
      g.withScope(`layers.${i}`, () => {
        const inputNorm = weights.get(`${layer}.input_layernorm.weight`, [config.hiddenSize]);
        const first = hs.map((h, s) =>
          g.withScope('input_layernorm', () => addAndNorm(h, pending?.[s], inputNorm, eps, ctx)),
        );
        hs = first.map((f) => f.sum);
        const attended = g.withScope('self_attn', () => {
          const projected = first.map((f, s) => project(f.normed, `${layer}.self_attn`, weights, ctx, rotary[s]));
          const contexts = g.withScope('scores', () => core(i, projected));
          return contexts.map((context, s) =>
            outputProjection(context, first[s].normed, `${layer}.self_attn`, weights, ctx),
          );
        });
        const postNorm = weights.get(`${layer}.post_attention_layernorm.weight`, [config.hiddenSize]);
        const second = hs.map((h, s) =>
          g.withScope('post_attention_layernorm', () => addAndNorm(h, attended[s], postNorm, eps, ctx)),
        );
        hs = second.map((x) => x.sum);
        pending = second.map((x) => g.withScope('mlp', () => mlp(x.normed, `${layer}.mlp`, weights, ctx)));
      }),
    );
  }
  const finalNorm = weights.get('model.norm.weight', [config.hiddenSize]);
  return hs.map((h, s) => g.withScope('norm', () => addAndNorm(h, pending?.[s], finalNorm, eps, ctx).normed));
}

/** The embedding rows of `ids` [B, T] → [B, T, hidden]; a quantized embedding dequantizes only the rows it gathers. */
function embedTokens(config: ModelConfig, weights: WeightInputs, ids: Tensor, dtype: ComputeDtype): Tensor {
  const name = 'model.embed_tokens.weight';
  const q = weights.quantizedMatrix(name);
  if (!q) return op.gather(weights.get(name, [config.vocabSize, config.hiddenSize]), ids, 0);
  return op.dequantizeRows(op.gather(q.data, ids, 0), op.gather(q.scales, ids, 0), q, dtype);
}

/** Token embeddings [B, T, H] with the image embeddings written over their tokens (masked_scatter in transformers). */
function withImages(embedded: Tensor, images: DecoderInputs['images']): Tensor {
  if (!images) return embedded;
  const hidden = embedded.shape[2];
  const flat = op.scatterND(op.reshape(embedded, [-1, hidden]), op.unsqueeze(images.slots, [-1]), images.values);
  return op.reshapeTo(flat, op.shapeOf(embedded), embedded.shape);
}

/**
 * The trunk over one batch of sequences: normed hidden states [B, T, hidden]. `core` decides
 * what the queries attend to (default: causal within each sequence, padding masked).
 */
export function decoderTrunk(
  g: Graph,
  config: ModelConfig,
  weights: WeightInputs,
  inputs: DecoderInputs,
  options: DecoderOptions,
  core?: AttentionCore,
): Tensor {
  const single = core ?? causalCore(inputs.keyMask, inputs.ids, options.dtype);
  return decoderSegments(g, config, weights, [inputs], options, (layer, [s]) => [single(layer, s.q, s.k, s.v)])[0];
}

/**
 * Attention for a batch whose sequences all begin with the same tokens (the system prompt, the
 * tools' schemas, often the question): the shared prefix [1, P] runs once, causally; each
 * suffix [B, S] attends to the prefix's keys (broadcast over the batch, never copied) and
 * causally to its own. Gradients from every suffix flow into the one prefix computation, so the
 * result equals running every full sequence separately, at a fraction of the cost.
 */
export function sharedPrefixCore(prefix: DecoderInputs, suffix: DecoderInputs, dtype: ComputeDtype): SegmentCore {
  const prefixBias = maskBias(visibleKeys(prefix.keyMask, prefix.ids), dtype); // [1,1,1,P,P]
  const suffixBias = maskBias(visibleKeys(suffix.keyMask, suffix.ids), dtype); // [B,1,1,S,S]
  return (_layer, [p, s]) => {
    const prefixContext = mixValues(op.softmax(op.add(groupScores(p.q, p.k), prefixBias), -1), p.v);
    const toPrefix = groupScores(s.q, p.k); // [B, kv, group, S, P]
    const toSelf = op.add(groupScores(s.q, s.k), suffixBias); // [B, kv, group, S, S]
    const probabilities = op.softmax(op.concat([toPrefix, toSelf], -1), -1);
    const [pPrefix, pSelf] = op.splitBy(
      probabilities,
      op.concat([op.shapeOf(p.k, 2, 3), op.shapeOf(s.k, 2, 3)], 0),
      [toPrefix.shape, toSelf.shape],
      -1,
    );
    return [prefixContext, op.add(mixValues(pPrefix, p.v), mixValues(pSelf, s.v))];
  };
}

/**
 * The logits h · Wᵀ [..., vocab] of the LM head: `lm_head.weight`, or the embedding when the
 * config ties them — quantized where the base is.
 */
export function lmHeadLogits(
  config: ModelConfig,
  weights: WeightInputs,
  h: Tensor,
  project: (x: Tensor, weight: Tensor) => Tensor,
  options: { chunked?: boolean } = {},
): Tensor {
  const name = config.tieWordEmbeddings ? 'model.embed_tokens.weight' : 'lm_head.weight';
  const q = weights.quantizedMatrix(name);
  if (q && options.chunked && h.dtype === 'float32')
    return chunkedQuantizedLogits(h, q, weights.quantized!.accuracyLevel);
  return weightProjection(h, name, [config.vocabSize, config.hiddenSize], weights, project);
}

/** Float32 values per chunk of a quantized LM head read as an input (128 MB). */
const LM_HEAD_CHUNK_VALUES = 2 ** 25;

/**
 * The logits over a quantized LM head read as a graph input, a block of vocabulary rows at a time.
 * Reading codes that are not packed (lowMemory), MatMulNBits dequantizes the whole matrix into a
 * float32 buffer, and its gradient multiplies by the dequantized matrix too, packed or not: for a
 * 150k-token vocabulary that is about a gigabyte twice over, at the update's peak. In blocks, one
 * block's floats at a time. (Generation has no gradient and reads the codes packed.)
 */
function chunkedQuantizedLogits(h: Tensor, q: op.QuantizedMatrix, accuracyLevel: number): Tensor {
  const rowsPerChunk = Math.max(1, Math.floor(LM_HEAD_CHUNK_VALUES / q.columns));
  if (q.rows <= rowsPerChunk) return op.matMulNBits(h, q, accuracyLevel);
  const parts: Tensor[] = [];
  for (let start = 0; start < q.rows; start += rowsPerChunk) {
    const end = Math.min(q.rows, start + rowsPerChunk);
    const rows = { starts: [start], ends: [end], axes: [0] };
    const chunk = { ...q, data: op.slice(q.data, rows), scales: op.slice(q.scales, rows), rows: end - start };
    parts.push(op.matMulNBits(h, chunk, accuracyLevel));
  }
  return op.concat(parts, -1);
}
