/**
 * The trainer's one seeded random generator: xoshiro128** (Blackman & Vigna), seeded through
 * SplitMix64. Used for initial weights, sampling and dataset shuffling, so a run with the same
 * seed draws the same numbers on every machine and in every Node version (Math.random offers
 * neither a seed nor a saved state). Its state is four uint32 words, which a checkpoint can
 * store and restore to continue the exact stream.
 */

const UINT32 = 0x1_0000_0000;
const TWO_POW_53 = 9007199254740992;

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/** SplitMix64 turns any seed (even 0 or 1) into a well-mixed, non-zero xoshiro state. */
function splitMix64State(seed: bigint): [number, number, number, number] {
  const mask = (1n << 64n) - 1n;
  let x = seed & mask;
  const words: number[] = [];
  for (let i = 0; i < 2; i++) {
    x = (x + 0x9e3779b97f4a7c15n) & mask;
    let z = x;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask;
    z ^= z >> 31n;
    words.push(Number(z & 0xffffffffn), Number(z >> 32n));
  }
  return words as [number, number, number, number];
}

export type RandomState = readonly [number, number, number, number];

export class Random {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  private constructor(state: RandomState) {
    [this.s0, this.s1, this.s2, this.s3] = state.map((w) => w >>> 0) as [number, number, number, number];
  }

  /** A generator from an integer seed in [0, 2^53). */
  static fromSeed(seed: number): Random {
    if (!Number.isSafeInteger(seed) || seed < 0)
      throw new RangeError(`random seed: expected a non-negative integer below 2^53, got ${seed}`);
    return new Random(splitMix64State(BigInt(seed)));
  }

  /** A generator that continues exactly where the one whose `state()` this was stopped. */
  static fromState(state: RandomState): Random {
    if (state.length !== 4 || state.some((w) => !Number.isInteger(w) || w < 0 || w >= UINT32)) {
      throw new RangeError(`random state: expected four uint32 words, got ${JSON.stringify(state)}`);
    }
    if (state.every((w) => w === 0)) throw new RangeError('random state: all-zero is not a valid xoshiro128** state');
    return new Random(state);
  }

  state(): RandomState {
    return [this.s0 >>> 0, this.s1 >>> 0, this.s2 >>> 0, this.s3 >>> 0];
  }

  /** The next 32 random bits as an unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits (every double of the form k / 2^53). */
  nextFloat(): number {
    const high = this.nextUint32() >>> 5;
    const low = this.nextUint32() >>> 6;
    return (high * 67108864 + low) / TWO_POW_53;
  }

  /** Uniform integer in [0, n), without modulo bias; n in [1, 2^32]. */
  nextInt(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > UINT32)
      throw new RangeError(`nextInt: expected an integer bound in [1, 2^32], got ${n}`);
    const limit = UINT32 - (UINT32 % n);
    for (;;) {
      const u = this.nextUint32();
      if (u < limit) return u % n;
    }
  }

  /** One standard normal draw (Box-Muller; the second value of the pair is discarded). */
  normal(): number {
    const u1 = 1 - this.nextFloat(); // (0, 1]: log stays finite
    const u2 = this.nextFloat();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /**
   * Fills `out` with normal(mean, std) draws: Box-Muller on two 32-bit uniforms per pair,
   * using both values of the pair. The generator is inlined over local state because this
   * initialises whole checkpoints (half a billion values for a 0.5B model); 32-bit uniforms
   * still reach 6.6 standard deviations.
   */
  fillNormal(out: Float32Array | Float64Array, mean = 0, std = 1): void {
    let s0 = this.s0;
    let s1 = this.s1;
    let s2 = this.s2;
    let s3 = this.s3;
    const scale = 2 ** -32;
    const n = out.length;
    for (let i = 0; i < n; i += 2) {
      const a = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
      let t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = rotl(s3, 11);
      const b = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
      t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = rotl(s3, 11);
      const radius = std * Math.sqrt(-2 * Math.log((a + 1) * scale)); // (0, 1]: log stays finite
      const angle = 2 * Math.PI * b * scale;
      out[i] = mean + radius * Math.cos(angle);
      if (i + 1 < n) out[i + 1] = mean + radius * Math.sin(angle);
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }

  /** Shuffles `items` in place (Fisher-Yates) and returns it. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.nextInt(i + 1);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }
}
