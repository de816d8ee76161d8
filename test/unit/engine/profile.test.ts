import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { matrixFlops } from '../../../trainer/engine/runtime/profile';

const node = (op: string, a: number[], b: number[], out: number[]) => ({ op, inputs: [{ dtype: 'float', shape: a }, { dtype: 'float', shape: b }], outputs: [{ dtype: 'float', shape: out }] });

test('matrixFlops counts 2·M·K·N per product, batched, transposed or not', () => {
  assert.equal(matrixFlops(node('MatMul', [2048, 256], [256, 1024], [2048, 1024])), 2 * 2048 * 256 * 1024);
  // Batched attention scores: [B, H, T, d] × [B, H, d, T].
  assert.equal(matrixFlops(node('MatMul', [8, 4, 256, 64], [8, 4, 64, 256], [8, 4, 256, 256])), 2 * 8 * 4 * 256 * 64 * 256);
  // A weight gradient Xᵀ·dY, a FusedMatMul with transA: X [T=2048, 256], dY [2048, 1024], product [256, 1024], K = T.
  assert.equal(matrixFlops(node('FusedMatMul', [2048, 256], [2048, 1024], [256, 1024])), 2 * 256 * 1024 * 2048);
  // Square A: K = M whichever way it was read.
  assert.equal(matrixFlops(node('Gemm', [64, 64], [64, 32], [64, 32])), 2 * 64 * 64 * 32);
  assert.equal(matrixFlops(node('MatMul', [256], [256, 10], [10])), 2 * 256 * 10);
});

test('matrixFlops is undefined for other ops and unreadable shapes', () => {
  assert.equal(matrixFlops(node('Add', [4, 4], [4, 4], [4, 4])), undefined);
  assert.equal(matrixFlops({ op: 'MatMul', inputs: [], outputs: [] }), undefined);
});
