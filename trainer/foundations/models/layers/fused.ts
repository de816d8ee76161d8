import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import { fail } from '../../engine/ops/common';
import type { ExecutionProviderName } from '../../engine/runtime/providers';

/**
 * onnxruntime's fused kernels for graphs that only run forward (generation, scoring for old and
 * reference log-probs). Each replaces a chain of small nodes by one kernel on the CPU and WebGPU
 * providers: fewer passes over the activations and less per-node overhead, which is most of a
 * batch-1 decoding step outside the matrix products. They have no gradient rules here, so the
 * training graphs keep the plain ops (layers/linear, norm, rotary); float32 only.
 *
 *   linear        FusedMatMul(x, W, transB=1): W stays in Hugging Face's [out, in] layout and x
 *                 keeps its leading axes (no Reshape/Shape/Concat around a Gemm); not on WebGPU
 *   rmsNorm       SimplifiedLayerNormalization
 *   addRmsNorm    SkipSimplifiedLayerNormalization: the residual add and the next norm in one pass
 *   rotary        RotaryEmbedding with cos/sin tables built once per graph up to the largest position
 */
const MS = 'com.microsoft';

/** Which fused kernels a provider has: every one of these on the CPU and CUDA; WebGPU has no FusedMatMul. */
export interface FusedKernels {
  transposedMatMul: boolean;
}

export function fusedKernelsFor(provider: ExecutionProviderName): FusedKernels {
  return { transposedMatMul: provider !== 'webgpu' };
}

function requireFloat32(name: string, x: Tensor): void {
  if (x.dtype !== 'float32')
    fail(name, x.graph, 'fused kernels are float32 only (use the plain layers for float64)', x);
}

/** y = x·Wᵀ (+ b), x [..., in], W [out, in]. */
export function fusedLinear(x: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  requireFloat32('FusedMatMul', x);
  const g = x.graph;
  const out = weight.shape[0];
  const [y] = g.addNode(
    'FusedMatMul',
    [x, weight],
    [{ dtype: x.dtype, shape: [...x.shape.slice(0, -1), out] }],
    { transA: 0, transB: 1, alpha: { float: 1 } },
    { domain: MS },
  );
  return bias ? op.add(y, bias) : y;
}

/** x / sqrt(mean(x², last axis) + eps) · weight. */
export function fusedRmsNorm(x: Tensor, weight: Tensor, eps: number): Tensor {
  requireFloat32('SimplifiedLayerNormalization', x);
  return x.graph.addNode('SimplifiedLayerNormalization', [x, weight], [{ dtype: x.dtype, shape: x.shape }], {
    axis: -1,
    epsilon: { float: eps },
    stash_type: 1,
  })[0];
}

/** sum = x + delta and rmsNorm(sum), in one kernel. x, delta [B, T, hidden]. */
export function fusedAddRmsNorm(
  x: Tensor,
  delta: Tensor,
  weight: Tensor,
  eps: number,
): { sum: Tensor; normed: Tensor } {
  requireFloat32('SkipSimplifiedLayerNormalization', x);
  const g = x.graph;
  // Outputs: normed, mean (unused), inverse std (unused), input + skip.
  const spec = { dtype: x.dtype, shape: x.shape };
  const outputs = g.addNode(
    'SkipSimplifiedLayerNormalization',
    [x, delta, weight],
    [spec, { dtype: x.dtype, shape: [] }, { dtype: x.dtype, shape: [] }, spec],
    { epsilon: { float: eps } },
    { domain: MS },
  );
  return { normed: outputs[0], sum: outputs[3] };
}

/** cos and sin of position × inverse frequency for positions 0 … max(positions): [P, headDim/2], shared by every layer. */
export interface RotaryCache {
  positions: Tensor;
  cos: Tensor;
  sin: Tensor;
}

export function rotaryCache(positions: Tensor, inverseFrequencies: Float64Array): RotaryCache {
  const g = positions.graph;
  return g.withScope('rotary_cache', () => {
    const limit = op.add(op.reduceMax(positions, undefined, false), g.scalar(1, 'int64'));
    const steps = op.cast(op.range(g.scalar(0, 'int64'), limit, g.scalar(1, 'int64'), 'P'), 'float32'); // [P]
    const freq = g.constant(Float32Array.from(inverseFrequencies), 'float32', [inverseFrequencies.length]);
    const angles = op.mul(op.unsqueeze(steps, [-1]), freq); // [P, half]
    return { positions, cos: op.cos(angles), sin: op.sin(angles) };
  });
}

/** The rotate-half rotary embedding of x [B, heads, T, headDim] at the cache's positions [B, T]. */
export function fusedRotary(x: Tensor, cache: RotaryCache): Tensor {
  requireFloat32('RotaryEmbedding', x);
  return x.graph.addNode(
    'RotaryEmbedding',
    [x, cache.positions, cache.cos, cache.sin],
    [{ dtype: x.dtype, shape: x.shape }],
    { interleaved: 0 },
    { domain: MS },
  )[0];
}
