import type { UniformSource } from '../../../foundations/models/generation/policy';
import { Random } from '../../../foundations/models/random';

/**
 * Sampling randomness addressed by what is sampled, not by when: each row of a generation session
 * draws from a stream of its own, set before each turn from the turn's address (a session and its
 * turn in training, a request's seed and choice when served). Which other rows share the decoding
 * steps, and in which order requests arrived, then changes no draw: a deterministic agent under
 * the same seed samples the same tokens however its requests were batched (up to the arithmetic of
 * a batch, which onnxruntime's CPU kernels compute row by row).
 */
export class AddressedDraws implements UniformSource {
  private readonly streams = new Map<number, Random>();

  /** Row `row` draws from `seed`'s stream until it is addressed again. */
  address(row: number, seed: number): void {
    this.streams.set(row, Random.fromSeed(seed));
  }

  next(row: number, generating: boolean): number {
    if (!generating) return 0.5;
    const stream = this.streams.get(row);
    if (!stream) throw new Error(`row ${row} samples without an address for its draws`);
    return stream.nextFloat();
  }
}

/** A seed from parts (a run's seed, a session, a turn), well mixed and below 2^53. */
export function drawSeed(...parts: number[]): number {
  let h = 0x811c9dc5;
  let g = 0x2545f491;
  for (const p of parts) {
    const v = Math.floor(Math.abs(p)) % 0x1_0000_0000;
    const hi = Math.floor(Math.abs(p) / 0x1_0000_0000) % 0x1_0000_0000;
    h = Math.imul(h ^ v, 0x01000193) >>> 0;
    g = Math.imul(g ^ hi ^ (p < 0 ? 0x9e3779b9 : 0), 0x85ebca6b) >>> 0;
    h = Math.imul(h ^ (g >>> 13), 0xc2b2ae35) >>> 0;
  }
  return (g % 0x200000) * 0x1_0000_0000 + h;
}
