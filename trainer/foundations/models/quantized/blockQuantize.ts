import { z } from 'zod';
import { float16ToFloat32Bits, float32Bits, float32BitsToFloat16, float32FromBits } from '../files/halfFloat';

/**
 * Block quantization of a frozen base's matrices, as llama.cpp's q4_0 and q8_0 compute it: each
 * row is cut into blocks of `blockSize` columns; a block keeps one scale (rounded to float16, as
 * GGUF stores it) and a signed code per weight — 4 bits: d = m / −8 where m is the block's value
 * of largest magnitude, code = min(15, trunc(x·(1/d) + 8.5)) − 8; 8 bits: d = max|x| / 127,
 * code = round(x·(1/d)). Codes are stored offset by the midpoint (8 or 128) in onnxruntime
 * MatMulNBits' layout (engine/ops/quantized.ts); a GGUF writer takes the same blocks from
 * quantizeBlock and lays them out as ggml does (gguf/encode.ts).
 */

/** Weights per scale: a power of two from 16 to 256, as MatMulNBits takes. */
export const BlockSize = z
  .number()
  .int()
  .min(16)
  .max(256)
  .refine((n) => (n & (n - 1)) === 0, 'blockSize must be a power of two (16, 32, 64, 128 or 256)');

/** `model.quantize` in a training config: 'int4', 'int8', or either with its block size. */
export const QuantizeSetting = z.union([
  z.enum(['int4', 'int8']),
  z
    .object({
      type: z.enum(['int4', 'int8']),
      /** Weights per scale: 32 is llama.cpp's q4_0/q8_0 block; onnxruntime's tools default to 128 (smaller, a little less exact). */
      blockSize: BlockSize.default(32),
      /**
       * Give up speed for memory: scoring and the update read the codes as they are stored and
       * dequantize each matrix at every pass, instead of holding a copy packed for the kernel per
       * session (quantized/README.md). 4-bit products are then float32 ones. Default: on for a
       * base of more than LOW_MEMORY_ABOVE parameters.
       */
      lowMemory: z.boolean().optional(),
    })
    .strict(),
]);
export type QuantizeSetting = z.input<typeof QuantizeSetting>;

/** How a frozen base is quantized: its matrices at `bits`, in blocks of `blockSize` weights per scale. */
export interface Quantization {
  bits: 4 | 8;
  blockSize: number;
  /** Scoring and the update dequantize the codes at every pass rather than pack them (QuantizeSetting); unset: by size. */
  lowMemory?: boolean | undefined;
}

/**
 * Base parameters above which `lowMemory` is on unless a config says otherwise. Rule: the default
 * must leave a 16 GB laptop room for its editor and system. Measured at Qwen2.5-1.5B
 * (quantized/README.md): scoring and the update peak at 11.0 GB with packed codes, 5.8 GB with the
 * codes read as stored.
 */
export const LOW_MEMORY_ABOVE = 1e9;

/** Whether scoring and the update read a base of `parameters` weights unpacked: as set, else by size. */
export function lowMemoryFor(q: Quantization, parameters: number): boolean {
  return q.lowMemory ?? parameters > LOW_MEMORY_ABOVE;
}

export const DEFAULT_BLOCK_SIZE = 32;

export function quantizationOf(setting: QuantizeSetting): Quantization {
  const parsed = QuantizeSetting.parse(setting);
  if (typeof parsed === 'string') return { bits: parsed === 'int4' ? 4 : 8, blockSize: DEFAULT_BLOCK_SIZE };
  const q: Quantization = { bits: parsed.type === 'int4' ? 4 : 8, blockSize: parsed.blockSize };
  if (parsed.lowMemory !== undefined) q.lowMemory = parsed.lowMemory;
  return q;
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
  const codes = new Uint8Array(blockSize);
  for (let block = 0; block < rows * blocks; block++) {
    // Rows are whole blocks, so block b covers values [b·size, (b+1)·size).
    const half = quantizeBlock(values, block * blockSize, blockSize, bits, codes);
    scales[block] = float32FromBits(float16ToFloat32Bits(half));
    const out = block * bytesPerBlock;
    if (bits === 8) data.set(codes, out);
    else for (let i = 0; i < blockSize; i += 2) data[out + i / 2] = codes[i] | (codes[i + 1] << 4);
  }
  return { rows, columns, bits, blockSize, data, scales };
}

const f32 = Math.fround;

/**
 * One block, bit for bit as llama.cpp's quantize_row_q4_0_ref (4 bits) or quantize_row_q8_0_ref
 * (8 bits) computes it: writes `size` codes offset by the midpoint (0…15 or 1…255) to `codes` and
 * returns the scale d as float16 bits. Every step rounds to float32 as the C code does, the sum
 * x·(1/d) + 8.5 included: a sum just below an integer can round up to it, and trunc then differs.
 */
export function quantizeBlock(
  values: Float32Array,
  start: number,
  size: number,
  bits: 4 | 8,
  codes: Uint8Array,
): number {
  let d: number;
  if (bits === 4) {
    // d = m / −8 for the value m of largest magnitude (the first one, on ties): m's code is 0.
    let largest = 0;
    let signed = 0;
    for (let i = 0; i < size; i++) {
      const v = values[start + i];
      if (Math.abs(v) > largest) {
        largest = Math.abs(v);
        signed = v;
      }
    }
    d = f32(signed / -8);
    const inverse = d ? f32(1 / d) : 0;
    // The sum is positive, so `| 0` truncates like C's (int8_t) cast.
    for (let i = 0; i < size; i++) codes[i] = Math.min(15, f32(f32(values[start + i] * inverse) + 8.5) | 0);
  } else {
    // d = max|x| / 127; codes in [−127, 127], rounded half away from zero (C's roundf).
    let largest = 0;
    for (let i = 0; i < size; i++) largest = Math.max(largest, Math.abs(values[start + i]));
    d = f32(largest / 127);
    const inverse = d ? f32(1 / d) : 0;
    for (let i = 0; i < size; i++) {
      const x = f32(values[start + i] * inverse);
      codes[i] = 128 + (x >= 0 ? (x + 0.5) | 0 : -((0.5 - x) | 0));
    }
  }
  return float32BitsToFloat16(float32Bits(d));
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
