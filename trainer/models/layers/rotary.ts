import type { Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';

/** cos and sin tables for rotary embeddings, [B, 1, T, headDim], from integer positions [B, T]. */
export interface RotaryTables {
  cos: Tensor;
  sin: Tensor;
}

/**
 * Rotary tables as Hugging Face computes them: angles = position · inverse frequency, the
 * half-dimension angles repeated twice (the `rotate_half` layout). `inverseFrequencies` has
 * headDim/2 entries and already includes the family's scaling (Llama 3, linear, …).
 */
export function rotaryTables(positions: Tensor, inverseFrequencies: Float64Array, dtype: 'float32' | 'float64'): RotaryTables {
  const g = positions.graph;
  return g.withScope('rotary', () => {
    const half = inverseFrequencies.length;
    const freq = g.constant(dtype === 'float64' ? Float64Array.from(inverseFrequencies) : Float32Array.from(inverseFrequencies), dtype, [half]);
    const angles = op.mul(op.unsqueeze(op.cast(positions, dtype), [-1]), freq); // [B, T, half]
    const both = op.unsqueeze(op.concat([angles, angles], -1), [1]); // [B, 1, T, headDim]
    return { cos: op.cos(both), sin: op.sin(both) };
  });
}

/** x·cos + rotate_half(x)·sin with rotate_half([x1, x2]) = [−x2, x1], for x [B, H, T, headDim]. */
export function applyRotary(x: Tensor, tables: RotaryTables): Tensor {
  const half = (x.shape[x.rank - 1] as number) / 2;
  const [x1, x2] = op.split(x, [half, half], -1);
  const rotated = op.concat([op.neg(x2), x1], -1);
  return op.add(op.mul(x, tables.cos), op.mul(rotated, tables.sin));
}
