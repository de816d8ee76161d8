import type { Tensor } from '../graph';
import { broadcastShapes, type Dim } from '../shape';
import { fail, requireFloat, requireSameDtype } from './common';

function innerMatches(a: Dim, b: Dim): boolean {
  return a === b || typeof a !== 'number' || typeof b !== 'number';
}

/** numpy matmul over the last two axes, broadcasting the batch axes (both operands rank >= 2). */
export function matmul(a: Tensor, b: Tensor): Tensor {
  requireFloat('MatMul', a);
  const dtype = requireSameDtype('MatMul', a, b);
  if (a.rank < 2 || b.rank < 2) fail('MatMul', a.graph, 'both operands need rank >= 2', a, b);
  const k1 = a.shape[a.rank - 1];
  const k2 = b.shape[b.rank - 2];
  if (!innerMatches(k1, k2)) fail('MatMul', a.graph, `inner dimensions differ (${k1} vs ${k2})`, a, b);
  const batch = broadcastShapes(a.shape.slice(0, -2), b.shape.slice(0, -2));
  if (typeof batch === 'string') fail('MatMul', a.graph, `batch dimensions do not broadcast: ${batch}`, a, b);
  return a.graph.addNode('MatMul', [a, b], [{ dtype, shape: [...batch, a.shape[a.rank - 2], b.shape[b.rank - 1]] }])[0];
}

export interface GemmOptions {
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  beta?: number;
}

/** alpha · op(A) · op(B) + beta · C for 2-D A and B (op = optional transpose); C broadcasts. */
export function gemm(a: Tensor, b: Tensor, c?: Tensor, options: GemmOptions = {}): Tensor {
  requireFloat('Gemm', a);
  const dtype = requireSameDtype('Gemm', ...(c ? [a, b, c] : [a, b]));
  if (a.rank !== 2 || b.rank !== 2) fail('Gemm', a.graph, 'A and B must be 2-D', a, b);
  const [m, ka] = options.transA ? [a.shape[1], a.shape[0]] : [a.shape[0], a.shape[1]];
  const [kb, n] = options.transB ? [b.shape[1], b.shape[0]] : [b.shape[0], b.shape[1]];
  if (!innerMatches(ka, kb)) fail('Gemm', a.graph, `inner dimensions differ (${ka} vs ${kb})`, a, b);
  if (c) {
    const out = broadcastShapes([m, n], c.shape);
    if (typeof out === 'string' || out.length !== 2)
      fail('Gemm', a.graph, `C does not broadcast to [${m}, ${n}]`, a, b, c);
  }
  const attributes = {
    transA: options.transA ? 1 : 0,
    transB: options.transB ? 1 : 0,
    alpha: { float: options.alpha ?? 1 },
    beta: { float: options.beta ?? 1 },
  };
  return a.graph.addNode('Gemm', c ? [a, b, c] : [a, b], [{ dtype, shape: [m, n] }], attributes)[0];
}
