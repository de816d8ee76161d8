import type { Tensor } from '../graph';
import { fail } from './common';
import { cast, mul, sub } from './elementwise';
import { concat, reshape, unsqueeze } from './layout';

/**
 * A [rows, columns] matrix stored as onnxruntime's MatMulNBits reads it: each row cut into blocks
 * of `blockSize` columns, each block `bits`-bit codes with one scale, and no zero point stored —
 * the code's midpoint (8 for 4 bits, 128 for 8) stands for 0, so a weight is
 * (code − midpoint) · scale. Two 4-bit codes share a byte, the even column in the low nibble.
 *
 *   data    uint8   [rows, blocks, blockSize · bits / 8]
 *   scales  float32 [rows, blocks]
 */
export interface QuantizedMatrix {
  data: Tensor;
  scales: Tensor;
  rows: number;
  columns: number;
  bits: 4 | 8;
  blockSize: number;
}

const MS = 'com.microsoft';

/** The code that stands for zero: 2^(bits−1), MatMulNBits' default zero point. */
export function quantizedMidpoint(bits: 4 | 8): number {
  return bits === 4 ? 8 : 128;
}

/**
 * y = x · Wᵀ for x [..., columns] and W quantized (see QuantizedMatrix), by onnxruntime's
 * MatMulNBits. `accuracyLevel` 4 lets the CPU kernel quantize x to int8 per block and multiply in
 * integers (what llama.cpp does for its q4_0/q8_0 dot products); 0 multiplies in float32. Only
 * float32 x: the kernel has no float64.
 *
 * Its gradient with respect to x is dy · dequantize(W) (vjp.ts): the straight-through rule, exact
 * at accuracy level 0. W itself takes no gradient: a quantized base is frozen.
 */
export function matMulNBits(x: Tensor, w: QuantizedMatrix, accuracyLevel: number): Tensor {
  if (x.dtype !== 'float32') fail('MatMulNBits', x.graph, 'the kernel multiplies float32 activations only', x);
  const k = x.shape[x.rank - 1];
  if (typeof k === 'number' && k !== w.columns)
    fail('MatMulNBits', x.graph, `x has ${k} features, the matrix ${w.columns} columns`, x, w.data);
  return x.graph.addNode(
    'MatMulNBits',
    [x, w.data, w.scales],
    [{ dtype: 'float32', shape: [...x.shape.slice(0, -1), w.rows] }],
    { K: w.columns, N: w.rows, bits: w.bits, block_size: w.blockSize, accuracy_level: accuracyLevel },
    { domain: MS },
  )[0];
}

/**
 * The float values of quantized rows, in `dtype`: data [..., blocks, bytes] and scales
 * [..., blocks] → [..., blocks · blockSize]. Works on any leading axes, so it serves a whole
 * matrix (the backward pass of MatMulNBits) and rows gathered from one (token embeddings) alike.
 */
export function dequantizeRows(
  data: Tensor,
  scales: Tensor,
  layout: { bits: 4 | 8; blockSize: number },
  dtype: 'float32' | 'float64',
): Tensor {
  const g = data.graph;
  const { bits, blockSize } = layout;
  const blocks = data.shape[data.rank - 2];
  let codes: Tensor = data; // [..., blocks, blockSize] once unpacked
  if (bits === 4) {
    const low = g.addNode('BitwiseAnd', [data, g.scalar(15, 'uint8')], [{ dtype: 'uint8', shape: data.shape }])[0];
    const high = g.addNode('BitShift', [data, g.scalar(4, 'uint8')], [{ dtype: 'uint8', shape: data.shape }], {
      direction: 'RIGHT',
    })[0];
    // [..., blocks, bytes, 2]: each byte's low nibble then its high nibble, the columns' order.
    const pairs = concat([unsqueeze(low, [-1]), unsqueeze(high, [-1])], -1);
    codes = reshape(pairs, [...data.shape.slice(0, -1), blockSize]);
  }
  const centred = sub(cast(codes, dtype), quantizedMidpoint(bits));
  const values = mul(centred, unsqueeze(cast(scales, dtype), [-1])); // [..., blocks, blockSize]
  if (typeof blocks !== 'number') fail('DequantizeRows', g, 'the number of blocks must be known when building', data);
  // Leading axes keep their sizes (a symbolic axis becomes Reshape's 0: copy the input's).
  return reshape(values, [...data.shape.slice(0, -2), blocks * blockSize]);
}

/** The whole matrix as floats [rows, columns]. */
export function dequantizeMatrix(w: QuantizedMatrix, dtype: 'float32' | 'float64'): Tensor {
  return dequantizeRows(w.data, w.scales, w, dtype);
}
