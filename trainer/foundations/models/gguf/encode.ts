import { float32BitsToFloat16 } from '../files/halfFloat';
import { elementCount } from '../files/safetensors';
import { quantizeBlock } from '../quantized/blockQuantize';

/**
 * Tensor encodings a GGUF export writes, bit for bit as gguf-py's `quants.py` (F32, F16, Q8_0) and
 * ggml's quantize_row_q4_0_ref (Q4_0) produce them:
 *   F32   the float32 values
 *   F16   IEEE half, rounded to nearest even (numpy's astype(float16))
 *   Q8_0  blocks of 32 values along the innermost axis: a float16 scale d = max|x| / 127, then
 *         32 int8 q = round-half-away-from-zero(x / d) — 34 bytes per block
 *   Q4_0  blocks of 32 values: a float16 scale d = m / −8 (m the value of largest magnitude), then
 *         16 bytes of 4-bit codes q = min(15, trunc(x·(1/d) + 8.5)), standing for (q − 8)·d; byte j
 *         holds value j in its low nibble and value j + 16 in its high nibble — 18 bytes per block.
 *         The codes are QLoRA's 4-bit base's (quantized/blockQuantize.ts), in ggml's order.
 */
export type GgmlType = 'F32' | 'F16' | 'Q8_0' | 'Q4_0';

export const Q8_0_BLOCK = 32;
const Q8_0_BYTES = 2 + Q8_0_BLOCK;
export const Q4_0_BLOCK = 32;
const Q4_0_BYTES = 2 + Q4_0_BLOCK / 2;

/** Values per block of a block-quantized type; undefined for F32 and F16. */
function blockSize(type: GgmlType): number | undefined {
  return type === 'Q8_0' ? Q8_0_BLOCK : type === 'Q4_0' ? Q4_0_BLOCK : undefined;
}

/** Whether `type` can hold a tensor of this shape (Q8_0 and Q4_0 need whole blocks along the innermost axis). */
export function canEncode(type: GgmlType, shape: readonly number[]): boolean {
  const block = blockSize(type);
  return block === undefined || shape[shape.length - 1] % block === 0;
}

export function encodedBytes(type: GgmlType, shape: readonly number[]): number {
  const n = elementCount(shape);
  if (type === 'F32') return 4 * n;
  if (type === 'F16') return 2 * n;
  if (type === 'Q4_0') return (n / Q4_0_BLOCK) * Q4_0_BYTES;
  return (n / Q8_0_BLOCK) * Q8_0_BYTES;
}

export function encodeTensor(type: GgmlType, shape: readonly number[], values: Float32Array, name: string): Uint8Array {
  const n = elementCount(shape);
  if (values.length !== n)
    throw new Error(`GGUF tensor ${name}: shape [${shape.join(', ')}] needs ${n} values, got ${values.length}`);
  if (!canEncode(type, shape))
    throw new Error(
      `GGUF tensor ${name}: ${type} needs the innermost dimension (${shape[shape.length - 1]}) to be a multiple of ${blockSize(type)}`,
    );
  if (type === 'F32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  if (type === 'F16') return encodeF16(values);
  if (type === 'Q4_0') return encodeQ4_0(values);
  return encodeQ8_0(values);
}

function encodeF16(values: Float32Array): Uint8Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float32BitsToFloat16(bits[i]);
  return new Uint8Array(out.buffer);
}

const f32 = Math.fround;

/** Round half away from zero (gguf-py's np_roundf; C's roundf). */
function roundHalfAway(x: number): number {
  return Math.sign(x) * Math.floor(Math.abs(x) + 0.5);
}

export function encodeQ8_0(values: Float32Array): Uint8Array {
  const blocks = values.length / Q8_0_BLOCK;
  const out = new Uint8Array(blocks * Q8_0_BYTES);
  const view = new DataView(out.buffer);
  const scaleBits = new Float32Array(1);
  const scaleWord = new Uint32Array(scaleBits.buffer);
  for (let b = 0; b < blocks; b++) {
    const start = b * Q8_0_BLOCK;
    let amax = 0;
    for (let i = 0; i < Q8_0_BLOCK; i++) amax = Math.max(amax, Math.abs(values[start + i]));
    // float32 arithmetic throughout, as numpy does it on float32 arrays.
    const d = f32(amax / 127);
    const inverse = d === 0 ? 0 : f32(1 / d);
    scaleBits[0] = d;
    const base = b * Q8_0_BYTES;
    view.setUint16(base, float32BitsToFloat16(scaleWord[0]), true);
    for (let i = 0; i < Q8_0_BLOCK; i++) view.setInt8(base + 2 + i, roundHalfAway(f32(values[start + i] * inverse)));
  }
  return out;
}

/** The values a Q8_0 encoding stands for (tests compare against them). */
export function decodeQ8_0(bytes: Uint8Array, count: number, halfToFloat: (bits: number) => number): Float32Array {
  const out = new Float32Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let b = 0; b < count / Q8_0_BLOCK; b++) {
    const d = halfToFloat(view.getUint16(b * Q8_0_BYTES, true));
    for (let i = 0; i < Q8_0_BLOCK; i++) out[b * Q8_0_BLOCK + i] = d * view.getInt8(b * Q8_0_BYTES + 2 + i);
  }
  return out;
}

export function encodeQ4_0(values: Float32Array): Uint8Array {
  const blocks = values.length / Q4_0_BLOCK;
  const out = new Uint8Array(blocks * Q4_0_BYTES);
  const view = new DataView(out.buffer);
  const codes = new Uint8Array(Q4_0_BLOCK);
  const half = Q4_0_BLOCK / 2;
  for (let b = 0; b < blocks; b++) {
    const base = b * Q4_0_BYTES;
    view.setUint16(base, quantizeBlock(values, b * Q4_0_BLOCK, Q4_0_BLOCK, 4, codes), true);
    for (let j = 0; j < half; j++) out[base + 2 + j] = codes[j] | (codes[j + half] << 4);
  }
  return out;
}

/** The values a Q4_0 encoding stands for, (q − 8)·d as ggml's dequantize_row_q4_0 computes them. */
export function decodeQ4_0(bytes: Uint8Array, count: number, halfToFloat: (bits: number) => number): Float32Array {
  const out = new Float32Array(count);
  const half = Q4_0_BLOCK / 2;
  for (let b = 0; b < count / Q4_0_BLOCK; b++) {
    const base = b * Q4_0_BYTES;
    const d = halfToFloat(bytes[base] | (bytes[base + 1] << 8));
    for (let j = 0; j < half; j++) {
      const byte = bytes[base + 2 + j];
      out[b * Q4_0_BLOCK + j] = ((byte & 15) - 8) * d;
      out[b * Q4_0_BLOCK + j + half] = ((byte >> 4) - 8) * d;
    }
  }
  return out;
}
