import { float32BitsToFloat16 } from '../files/halfFloat';
import { elementCount } from '../files/safetensors';

/**
 * Tensor encodings a GGUF export writes, bit for bit as gguf-py's `quants.py` produces them:
 *   F32   the float32 values
 *   F16   IEEE half, rounded to nearest even (numpy's astype(float16))
 *   Q8_0  blocks of 32 values along the innermost axis: a float16 scale d = max|x| / 127, then
 *         32 int8 q = round-half-away-from-zero(x / d) — 34 bytes per block
 */
export type GgmlType = 'F32' | 'F16' | 'Q8_0';

export const Q8_0_BLOCK = 32;
const Q8_0_BYTES = 2 + Q8_0_BLOCK;

/** Whether `type` can hold a tensor of this shape (Q8_0 needs whole blocks along the innermost axis). */
export function canEncode(type: GgmlType, shape: readonly number[]): boolean {
  return type !== 'Q8_0' || shape[shape.length - 1] % Q8_0_BLOCK === 0;
}

export function encodedBytes(type: GgmlType, shape: readonly number[]): number {
  const n = elementCount(shape);
  if (type === 'F32') return 4 * n;
  if (type === 'F16') return 2 * n;
  return (n / Q8_0_BLOCK) * Q8_0_BYTES;
}

export function encodeTensor(type: GgmlType, shape: readonly number[], values: Float32Array, name: string): Uint8Array {
  const n = elementCount(shape);
  if (values.length !== n)
    throw new Error(`GGUF tensor ${name}: shape [${shape.join(', ')}] needs ${n} values, got ${values.length}`);
  if (!canEncode(type, shape))
    throw new Error(
      `GGUF tensor ${name}: ${type} needs the innermost dimension (${shape[shape.length - 1]}) to be a multiple of ${Q8_0_BLOCK}`,
    );
  if (type === 'F32') return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  if (type === 'F16') return encodeF16(values);
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
