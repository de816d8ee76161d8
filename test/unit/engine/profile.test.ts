import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { matrixFlops, readProfile } from '#trainer/foundations/engine/runtime/profile';

const node = (op: string, a: number[], b: number[], out: number[]) => ({
  op,
  inputs: [
    { dtype: 'float', shape: a },
    { dtype: 'float', shape: b },
  ],
  outputs: [{ dtype: 'float', shape: out }],
});

test('matrixFlops counts 2·M·K·N per product, batched, transposed or not', () => {
  assert.equal(matrixFlops(node('MatMul', [2048, 256], [256, 1024], [2048, 1024])), 2 * 2048 * 256 * 1024);
  // Batched attention scores: [B, H, T, d] × [B, H, d, T].
  assert.equal(
    matrixFlops(node('MatMul', [8, 4, 256, 64], [8, 4, 64, 256], [8, 4, 256, 256])),
    2 * 8 * 4 * 256 * 64 * 256,
  );
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

test('readProfile sums a node’s matrix FLOPs over its runs, each from that run’s shapes', () => {
  // A decoding graph's MatMul: a 32-token prefill, then two one-token steps.
  const run = (m: number) => ({
    cat: 'Node',
    name: 'q_proj_kernel_time',
    dur: 100,
    args: {
      op_name: 'MatMul',
      provider: 'CPUExecutionProvider',
      input_type_shape: [{ float: [m, 64] }, { float: [64, 64] }],
      output_type_shape: [{ float: [m, 64] }],
    },
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-test-'));
  try {
    const file = path.join(dir, 'profile.json');
    fs.writeFileSync(file, JSON.stringify([run(32), run(1), run(1), { cat: 'Session', name: 'model_run', dur: 500 }]));
    const [node] = readProfile(file);
    assert.equal(node.runs, 3);
    assert.equal(node.micros, 300);
    assert.equal(node.matrixFlops, 2 * 64 * 64 * (32 + 1 + 1));
    // Leaving out the prefill: the two one-token steps.
    const [steady] = readProfile(file, { skipRuns: 1 });
    assert.deepEqual(
      [steady.runs, steady.micros, steady.matrixFlops, steady.inputs[0].shape],
      [2, 200, 2 * 64 * 64 * 2, [1, 64]],
    );
    // By rows: the prefill's run apart from the steps'.
    const byRows = readProfile(file, { byRows: true }).map((n) => [n.rows, n.runs, n.micros, n.matrixFlops]);
    assert.deepEqual(byRows, [
      [32, 1, 100, 2 * 64 * 64 * 32],
      [1, 2, 200, 2 * 64 * 64 * 2],
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
