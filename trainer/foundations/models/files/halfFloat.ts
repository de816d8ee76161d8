/**
 * IEEE binary16 (float16) and bfloat16 <-> float32, bit-exact. Node 20 has no Float16Array,
 * and checkpoints on disk are mostly bf16/f16 while every graph computes in float32.
 * Narrowing rounds to nearest, ties to even (what PyTorch's `.to(torch.bfloat16)` and
 * `.half()` do); NaN stays NaN (quiet), overflow becomes infinity.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function float32Bits(value: number): number {
  f32[0] = value;
  return u32[0]!;
}

export function float32FromBits(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0]!;
}

/** bfloat16 bits -> float32 bits: the top half of a float32. */
export function bfloat16ToFloat32Bits(half: number): number {
  return (half << 16) >>> 0;
}

export function float32BitsToBfloat16(bits: number): number {
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) & 0x8000) | 0x7fc0; // NaN, kept quiet
  return ((bits >>> 0) + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
}

export function float16ToFloat32Bits(half: number): number {
  const sign = (half & 0x8000) << 16;
  const exponent = (half >>> 10) & 0x1f;
  const mantissa = half & 0x3ff;
  if (exponent === 0) {
    if (mantissa === 0) return sign >>> 0;
    // Subnormal: mantissa * 2^-24 is exact in float32.
    return (sign | float32Bits(mantissa * 2 ** -24)) >>> 0;
  }
  if (exponent === 0x1f) return (sign | 0x7f800000 | (mantissa << 13)) >>> 0;
  return (sign | ((exponent + 112) << 23) | (mantissa << 13)) >>> 0;
}

export function float32BitsToFloat16(bits: number): number {
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | (mantissa ? 0x7e00 : 0x7c00);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // too large: infinity
  if (e <= 0) {
    // Becomes subnormal (or zero): the 24-bit significand in units of 2^-24.
    if (e < -10) return sign;
    const significand = mantissa | 0x800000;
    const shift = 14 - e;
    let half = significand >>> shift;
    const rest = significand & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mantissa >>> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && half & 1)) half++; // a carry rolls into the exponent
  return sign | half;
}

let float16Table: Uint32Array | undefined;

/** float16 bits -> float32 bits for all 65536 values, built on first use (256 kB). */
function float16ToFloat32Table(): Uint32Array {
  if (!float16Table) {
    float16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) float16Table[h] = float16ToFloat32Bits(h);
  }
  return float16Table;
}

/** Widens `source` (16-bit words) into `target` (float32 bits) starting at `targetOffset`. */
export function widenHalves(
  kind: 'float16' | 'bfloat16',
  source: Uint16Array,
  target: Uint32Array,
  targetOffset: number,
): void {
  if (kind === 'bfloat16') {
    for (let i = 0; i < source.length; i++) target[targetOffset + i] = source[i]! << 16;
  } else {
    const table = float16ToFloat32Table();
    for (let i = 0; i < source.length; i++) target[targetOffset + i] = table[source[i]!]!;
  }
}

/** Narrows float32 bits `source[start, start + target.length)` into 16-bit words. */
export function narrowToHalves(
  kind: 'float16' | 'bfloat16',
  source: Uint32Array,
  start: number,
  target: Uint16Array,
): void {
  const convert = kind === 'bfloat16' ? float32BitsToBfloat16 : float32BitsToFloat16;
  for (let i = 0; i < target.length; i++) target[i] = convert(source[start + i]!);
}
