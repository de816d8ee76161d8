import type { HostTensor } from '../engine/runtime/tensors';

/**
 * Packing token sequences of different lengths into the [B, T] inputs of the scoring graph:
 * right padding (padding keys masked out, positions counting real tokens from 0), and the flat
 * indices of the tokens to score.
 */
export interface PackedBatch {
  feeds: { ids: HostTensor; positions: HostTensor; key_mask: HostTensor; score_tokens: HostTensor };
  /** Padded length T. */
  length: number;
  /** How many tokens are scored. */
  scored: number;
}

/**
 * `score[b]` marks which tokens of sequence b to score (1 = score; a sequence's first token
 * cannot be scored: nothing predicts it). Default: every token after the first.
 */
export function packForScoring(sequences: readonly (readonly number[])[], score?: readonly Uint8Array[], padId = 0, length?: number): PackedBatch {
  const B = sequences.length;
  const T = length ?? Math.max(1, ...sequences.map((s) => s.length));
  const ids = new BigInt64Array(B * T).fill(BigInt(padId));
  const positions = new BigInt64Array(B * T);
  const keyMask = new BigInt64Array(B * T);
  const scored: bigint[] = [];
  sequences.forEach((seq, b) => {
    if (seq.length > T) throw new Error(`sequence ${b} has ${seq.length} tokens, more than the batch length ${T}`);
    const marks = score?.[b];
    if (marks && marks.length !== seq.length) throw new Error(`sequence ${b}: the score mask has ${marks.length} entries for ${seq.length} tokens`);
    for (let t = 0; t < seq.length; t++) {
      ids[b * T + t] = BigInt(seq[t]);
      positions[b * T + t] = BigInt(t);
      keyMask[b * T + t] = 1n;
      const wanted = marks ? marks[t] === 1 : t > 0;
      if (wanted) {
        if (t === 0) throw new Error(`sequence ${b}: its first token cannot be scored (no position predicts it)`);
        scored.push(BigInt(b * T + t));
      }
    }
    // Padding continues the positions so rotary tables stay in range; its keys are masked.
    for (let t = seq.length; t < T; t++) positions[b * T + t] = BigInt(t);
  });
  return {
    feeds: {
      ids: { dtype: 'int64', shape: [B, T], data: ids },
      positions: { dtype: 'int64', shape: [B, T], data: positions },
      key_mask: { dtype: 'int64', shape: [B, T], data: keyMask },
      score_tokens: { dtype: 'int64', shape: [scored.length], data: BigInt64Array.from(scored) },
    },
    length: T,
    scored: scored.length,
  };
}
