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
export function rotaryTables(
  positions: Tensor,
  inverseFrequencies: Float64Array,
  dtype: 'float32' | 'float64',
): RotaryTables {
  const g = positions.graph;
  return g.withScope('rotary', () => {
    const half = inverseFrequencies.length;
    const freq = g.constant(
      dtype === 'float64' ? Float64Array.from(inverseFrequencies) : Float32Array.from(inverseFrequencies),
      dtype,
      [half],
    );
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

/**
 * Multimodal rotary tables (Qwen2-VL's M-RoPE) from positions [B, T, 3] (temporal, height,
 * width): frequency f of the head_dim/2 takes its angle from the axis whose section holds it
 * (`mrope_section`, e.g. [16, 24, 24]), as `apply_multimodal_rotary_pos_emb` selects them. The
 * selection is a [3, headDim/2] matrix, so the angles are one MatMul. Text tokens have three
 * equal positions and get the usual rotary embedding.
 */
export function mropeTables(
  positions: Tensor,
  inverseFrequencies: Float64Array,
  section: readonly [number, number, number],
  dtype: 'float32' | 'float64',
): RotaryTables {
  const g = positions.graph;
  return g.withScope('mrope', () => {
    const half = inverseFrequencies.length;
    const select = new Float64Array(3 * half);
    let f = 0;
    section.forEach((size, axis) => {
      for (let k = 0; k < size; k++, f++) select[axis * half + f] = inverseFrequencies[f];
    });
    const matrix = g.constant(dtype === 'float64' ? select : Float32Array.from(select), dtype, [3, half]);
    const angles = op.matmul(op.cast(positions, dtype), matrix); // [B, T, half]
    const both = op.unsqueeze(op.concat([angles, angles], -1), [1]);
    return { cos: op.cos(both), sin: op.sin(both) };
  });
}
