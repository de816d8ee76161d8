import { z } from 'zod';
import { float16ToFloat32Bits, float32Bits, float32BitsToFloat16, float32FromBits } from '../files/halfFloat';

/**
 * Block quantization of a frozen base's matrices, as llama.cpp's q4_0 and q8_0 compute it: each
 * row is cut into blocks of `blockSize` columns; a block keeps one scale (rounded to float16, as
 * GGUF stores it) and a signed code per weight — 4 bits: d = m / −8 where m is the block's value
 * of largest magnitude, code = min(7, ⌊x/d + 0.5⌋); 8 bits: d = max|x| / 127, code = round(x/d).
 * Codes are stored offset by the midpoint (8 or 128) in onnxruntime MatMulNBits' layout
 * (engine/ops/quantized.ts), so the same bytes feed the kernel and a GGUF writer.
 */

/** `model.quantize` in a training config: 'int4', 'int8', or either with its block size. */
export const QuantizeSetting = z.union([
  z.enum(['int4', 'int8']),
  z
    .object({
      type: z.enum(['int4', 'int8']),
      /** Weights per scale: 32 is llama.cpp's q4_0/q8_0 block; onnxruntime's tools default to 128 (smaller, a little less exact). */
      blockSize: z
        .number()
        .int()
        .min(16)
        .max(256)
        .refine((n) => (n & (n - 1)) === 0, 'blockSize must be a power of two (16, 32, 64, 128 or 256)')
        .default(32),
    })
    .strict(),
]);
export type QuantizeSetting = z.input<typeof QuantizeSetting>;

/** How a frozen base is quantized: its matrices at `bits`, in blocks of `blockSize` weights per scale. */
export interface Quantization {
  bits: 4 | 8;
  blockSize: number;
}

export const DEFAULT_BLOCK_SIZE = 32;

export function quantizationOf(setting: QuantizeSetting): Quantization {
  const parsed = QuantizeSetting.parse(setting);
  if (typeof parsed === 'string') return { bits: parsed === 'int4' ? 4 : 8, blockSize: DEFAULT_BLOCK_SIZE };
  return { bits: parsed.type === 'int4' ? 4 : 8, blockSize: parsed.blockSize };
}

/** One quantized matrix on the host: codes and scales in MatMulNBits' layout. */
export interface HostQuantizedMatrix {
  rows: number;
  columns: number;
  bits: 4 | 8;
  blockSize: number;
  /** uint8 [rows, blocks, blockSize · bits / 8] */
  data: Uint8Array;
  /** float32 [rows, blocks] */
  scales: Float32Array;
}

function toHalfPrecision(value: number): number {
  return float32FromBits(float16ToFloat32Bits(float32BitsToFloat16(float32Bits(value))));
}

/** Quantizes a row-major float32 [rows, columns] matrix; `columns` must be a multiple of the block size. */
export function quantizeMatrix(
  values: Float32Array,
  rows: number,
  columns: number,
  layout: { bits: 4 | 8; blockSize: number },
): HostQuantizedMatrix {
  const { bits, blockSize } = layout;
  if (columns % blockSize !== 0)
    throw new Error(`quantize: ${columns} columns do not split into blocks of ${blockSize}`);
  if (values.length !== rows * columns)
    throw new Error(`quantize: ${values.length} values are not a [${rows}, ${columns}] matrix`);
  const blocks = columns / blockSize;
  const bytesPerBlock = (blockSize * bits) / 8;
  const data = new Uint8Array(rows * blocks * bytesPerBlock);
  const scales = new Float32Array(rows * blocks);
  const codes = new Int32Array(blockSize);
  for (let block = 0; block < rows * blocks; block++) {
    const start = block * blockSize; // rows are whole blocks, so block b covers values [b·size, (b+1)·size)
    const scale =
      bits === 4 ? blockCodes4(values, start, blockSize, codes) : blockCodes8(values, start, blockSize, codes);
    scales[block] = toHalfPrecision(scale);
    const out = block * bytesPerBlock;
    if (bits === 8) for (let i = 0; i < blockSize; i++) data[out + i] = codes[i] + 128;
    else for (let i = 0; i < blockSize; i += 2) data[out + i / 2] = (codes[i] + 8) | ((codes[i + 1] + 8) << 4);
  }
  return { rows, columns, bits, blockSize, data, scales };
}

/** q4_0: d = m / −8 for the value m of largest magnitude; codes in [−8, 7]. Returns d. */
function blockCodes4(values: Float32Array, start: number, size: number, codes: Int32Array): number {
  let largest = 0;
  let signed = 0;
  for (let i = 0; i < size; i++) {
    const v = values[start + i];
    if (Math.abs(v) > largest) {
      largest = Math.abs(v);
      signed = v;
    }
  }
  const d = Math.fround(signed / -8);
  const inverse = d ? Math.fround(1 / d) : 0;
  for (let i = 0; i < size; i++)
    codes[i] = Math.min(15, Math.fround(Math.fround(values[start + i] * inverse) + 8.5) | 0) - 8; // float32 sum, as C's; positive, so `| 0` truncates like its (int8_t) cast
  return d;
}

/** q8_0: d = max|x| / 127; codes in [−127, 127], rounded half away from zero. Returns d. */
function blockCodes8(values: Float32Array, start: number, size: number, codes: Int32Array): number {
  let largest = 0;
  for (let i = 0; i < size; i++) largest = Math.max(largest, Math.abs(values[start + i]));
  const d = Math.fround(largest / 127);
  const inverse = d ? Math.fround(1 / d) : 0;
  for (let i = 0; i < size; i++) {
    const x = Math.fround(values[start + i] * inverse);
    codes[i] = x >= 0 ? (x + 0.5) | 0 : -((0.5 - x) | 0); // roundf: half away from zero
  }
  return d;
}

/** The float32 values a quantized matrix stands for: (code − midpoint) · scale. */
export function dequantizeOnHost(m: HostQuantizedMatrix): Float32Array {
  const out = new Float32Array(m.rows * m.columns);
  const bytesPerBlock = (m.blockSize * m.bits) / 8;
  for (let block = 0; block < m.scales.length; block++) {
    const scale = m.scales[block];
    const from = block * bytesPerBlock;
    const to = block * m.blockSize;
    for (let i = 0; i < m.blockSize; i++) {
      const code = m.bits === 8 ? m.data[from + i] - 128 : ((m.data[from + (i >> 1)] >> ((i & 1) * 4)) & 15) - 8;
      out[to + i] = code * scale;
    }
  }
  return out;
}
