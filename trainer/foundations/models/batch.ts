import type { HostTensor } from '../engine/runtime/tensors';

/**
 * Packing token sequences of different lengths into the [B, T] inputs of the scoring graph:
 * right padding (padding keys masked out, positions counting real tokens from 0), and the flat
 * indices of the tokens to score.
 */
export interface PackedBatch {
  feeds: {
    ids: HostTensor;
    positions: HostTensor;
    key_mask: HostTensor;
    score_tokens: HostTensor;
    prefix_ids?: HostTensor;
    prefix_positions?: HostTensor;
  };
  /** Padded length T of the rows in `ids` (the suffixes, with a shared prefix). */
  length: number;
  /** Tokens of the shared prefix (0 without one): row position t is sequence position prefix + t. */
  prefix: number;
  /** How many tokens are scored. */
  scored: number;
}

/**
 * The longest prefix all sequences share that stays clear of every scored token (and the
 * token before it, which predicts it) and leaves each sequence at least one token; at most
 * `maxPrefix` tokens (a caller whose equal ids can stand for different inputs — image
 * placeholders — caps it where they start to differ).
 */
export function sharedPrefixLength(
  sequences: readonly (readonly number[])[],
  score?: readonly Uint8Array[],
  maxPrefix = Infinity,
): number {
  if (sequences.length === 0) return 0;
  let n = Math.min(maxPrefix, ...sequences.map((s) => s.length - 1));
  for (let i = 0; i < n; i++) {
    const id = sequences[0][i];
    if (sequences.some((s) => s[i] !== id)) {
      n = i;
      break;
    }
  }
  sequences.forEach((_, b) => {
    const marks = score?.[b];
    const first = marks ? marks.indexOf(1) : 1;
    if (first >= 0) n = Math.min(n, first - 1);
  });
  return Math.max(0, n);
}

/**
 * `score[b]` marks which tokens of sequence b to score (1 = score; a sequence's first token
 * cannot be scored: nothing predicts it). Default: every token after the first.
 */
export function packForScoring(
  sequences: readonly (readonly number[])[],
  score?: readonly Uint8Array[],
  padId = 0,
  length?: number,
): PackedBatch {
  return packRows(sequences, score, padId, length, 0);
}

/**
 * Pack for the shared-prefix scoring graph: the common prefix once (`prefix_ids`,
 * `prefix_positions`), the rest of each sequence as a row. Falls back to no prefix when the
 * sequences share none (the caller then uses the plain graph: see `prefix`).
 */
export function packWithSharedPrefix(
  sequences: readonly (readonly number[])[],
  score?: readonly Uint8Array[],
  padId = 0,
  maxPrefix = Infinity,
): PackedBatch {
  const prefix = sharedPrefixLength(sequences, score, maxPrefix);
  if (prefix === 0) return packRows(sequences, score, padId, undefined, 0);
  const packed = packRows(
    sequences.map((s) => s.slice(prefix)),
    score?.map((m) => m.slice(prefix)),
    padId,
    undefined,
    prefix,
  );
  const ids = BigInt64Array.from(sequences[0].slice(0, prefix), (v) => BigInt(v));
  const positions = BigInt64Array.from({ length: prefix }, (_, i) => BigInt(i));
  packed.feeds.prefix_ids = { dtype: 'int64', shape: [1, prefix], data: ids };
  packed.feeds.prefix_positions = { dtype: 'int64', shape: [1, prefix], data: positions };
  return packed;
}

function packRows(
  sequences: readonly (readonly number[])[],
  score: readonly Uint8Array[] | undefined,
  padId: number,
  length: number | undefined,
  offset: number,
): PackedBatch {
  const B = sequences.length;
  const T = length ?? Math.max(1, ...sequences.map((s) => s.length));
  const ids = new BigInt64Array(B * T).fill(BigInt(padId));
  const positions = new BigInt64Array(B * T);
  const keyMask = new BigInt64Array(B * T);
  const scored: bigint[] = [];
  sequences.forEach((seq, b) => {
    if (seq.length > T) throw new Error(`sequence ${b} has ${seq.length} tokens, more than the batch length ${T}`);
    const marks = score?.[b];
    if (marks && marks.length !== seq.length)
      throw new Error(`sequence ${b}: the score mask has ${marks.length} entries for ${seq.length} tokens`);
    for (let t = 0; t < seq.length; t++) {
      ids[b * T + t] = BigInt(seq[t]);
      positions[b * T + t] = BigInt(offset + t);
      keyMask[b * T + t] = 1n;
      const wanted = marks ? marks[t] === 1 : t > 0;
      if (wanted) {
        if (t === 0)
          throw new Error(
            `sequence ${b}: its first ${offset ? 'token after the shared prefix' : 'token'} cannot be scored (no position of the row predicts it)`,
          );
        scored.push(BigInt(b * T + t));
      }
    }
    // Padding continues the positions so rotary tables stay in range; its keys are masked.
    for (let t = seq.length; t < T; t++) positions[b * T + t] = BigInt(offset + t);
  });
  return {
    feeds: {
      ids: { dtype: 'int64', shape: [B, T], data: ids },
      positions: { dtype: 'int64', shape: [B, T], data: positions },
      key_mask: { dtype: 'int64', shape: [B, T], data: keyMask },
      score_tokens: { dtype: 'int64', shape: [scored.length], data: BigInt64Array.from(scored) },
    },
    length: T,
    prefix: offset,
    scored: scored.length,
  };
}
