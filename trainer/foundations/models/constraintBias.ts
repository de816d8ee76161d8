import type { HostTensor } from '../engine/runtime/tensors';
import type { AllowedTokens } from './generation/policy';

/**
 * Constrained positions as graph inputs. A graph built for constraints adds a row of
 * `logit_bias` [K, V] to each position's scaled logits, picked by an int64 row index: row 0 is
 * all zeros (a free position), the other rows are 0 for allowed tokens and `DISALLOWED` for the
 * rest. The bias is added after the temperature, so log softmax over the biased logits is the
 * policy's distribution renormalised over the allowed tokens: disallowed tokens get probability
 * exactly 0 (exp underflows), allowed ones keep their logits bit for bit (x + 0 = x).
 */
export const DISALLOWED = -1e9;

const rows = new WeakMap<AllowedTokens, Float32Array>();

/** The bias row of an allowed set over a vocabulary of `vocab` logits (cached per set). */
export function biasRow(set: AllowedTokens, vocab: number): Float32Array {
  let row = rows.get(set);
  if (!row || row.length !== vocab) {
    row = new Float32Array(vocab).fill(DISALLOWED);
    const n = Math.min(vocab, set.allowed.length);
    for (let id = 0; id < n; id++) if (set.allowed[id]) row[id] = 0;
    rows.set(set, row);
  }
  return row;
}

/** The distinct allowed sets of the positions (table rows 1…K) and each position's row (0: free). */
export function biasRows(perPosition: readonly (AllowedTokens | undefined)[]): {
  sets: AllowedTokens[];
  rows: HostTensor;
} {
  const index = new Map<AllowedTokens, number>();
  const rowOf = new BigInt64Array(perPosition.length);
  perPosition.forEach((set, i) => {
    if (!set) return;
    let row = index.get(set);
    if (row === undefined) {
      row = index.size + 1;
      index.set(set, row);
    }
    rowOf[i] = BigInt(row);
  });
  return { sets: [...index.keys()], rows: { dtype: 'int64', shape: [perPosition.length], data: rowOf } };
}

/** The `logit_bias` table of `sets`: a zero row, then one row per set. */
export function biasTable(sets: readonly AllowedTokens[], vocab: number): HostTensor {
  const table = new Float32Array((sets.length + 1) * vocab);
  sets.forEach((set, k) => table.set(biasRow(set, vocab), (k + 1) * vocab));
  return { dtype: 'float32', shape: [sets.length + 1, vocab], data: table };
}

/** `logit_bias` and the row index of each position (`undefined`: free), for a graph over `vocab` logits. */
export function biasFeeds(
  perPosition: readonly (AllowedTokens | undefined)[],
  vocab: number,
): { logit_bias: HostTensor; bias_row: HostTensor } {
  const { sets, rows } = biasRows(perPosition);
  return { logit_bias: biasTable(sets, vocab), bias_row: rows };
}

/** A sequence's constrained positions: token index → the allowed set that was sampled under. */
export type PositionConstraints = ReadonlyMap<number, AllowedTokens>;

/**
 * The allowed set of each scored token, in the order the scoring graph scores them (see
 * packRows in batch.ts: sequence by sequence, position by position from the shared prefix on,
 * where the score mask is 1).
 */
export function scoredTokenConstraints(
  sequences: readonly { ids: readonly number[]; constraints?: PositionConstraints }[],
  score: readonly Uint8Array[],
  prefix: number,
): (AllowedTokens | undefined)[] {
  const out: (AllowedTokens | undefined)[] = [];
  sequences.forEach((s, b) => {
    for (let t = prefix; t < s.ids.length; t++) if (score[b][t] === 1) out.push(s.constraints?.get(t));
  });
  return out;
}
