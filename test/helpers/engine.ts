import * as assert from 'node:assert/strict';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import type { TensorGradCheck } from './gradcheck';

/** A seeded stream of uniform numbers in [0, 1) for test data (mulberry32). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function f64(shape: number[], random: () => number, scale = 1, offset = 0): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return { dtype: 'float64', shape, data: Float64Array.from({ length: n }, () => (random() * 2 - 1) * scale + offset) };
}

export function f32(shape: number[], random: () => number, scale = 1, offset = 0): HostTensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return { dtype: 'float32', shape, data: Float32Array.from({ length: n }, () => (random() * 2 - 1) * scale + offset) };
}

export function i64(shape: number[], values: number[]): HostTensor {
  return { dtype: 'int64', shape, data: BigInt64Array.from(values.map((v) => BigInt(v))) };
}

export function assertGradients(results: TensorGradCheck[], tolerance = 1e-6): void {
  for (const r of results) {
    assert.ok(r.checked > 0, `${r.name}: nothing checked`);
    assert.ok(r.maxAbsNumeric > 1e-9, `${r.name}: the numeric gradient is zero — the check cannot fail`);
    assert.ok(
      r.relativeError < tolerance,
      `${r.name}: relative error ${r.relativeError.toExponential(2)} ≥ ${tolerance} (max |numeric| ${r.maxAbsNumeric.toExponential(2)})`,
    );
  }
}
