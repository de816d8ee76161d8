import type { Tokenizer } from '../../../foundations/models/text/tokenizer';
import { advance, type GrammarState } from './jsonFrames';

/**
 * The vocabulary sorted by its tokens' bytes, with each token's common prefix with the one before
 * (`lcp`): a trie laid flat. A mask is computed by walking it once from a grammar state, keeping
 * the state after each prefix byte, so tokens that share a prefix share its work, and a dead
 * prefix kills every token under it at no cost — the idea behind xgrammar's and llama.cpp's token
 * tries, without building trie nodes (151k-token vocabularies included).
 *
 * Added tokens (`<|im_end|>`, `<tool_call>`, `<think>`) are never in the index: inside a call they
 * would be text that is not JSON, and the closing marker is allowed by its id where it may come.
 */
export class TokenIndex {
  /** Token ids in byte order. */
  readonly order: Int32Array;
  /** lcp[k]: bytes token order[k] shares with order[k − 1] (0 for the first). */
  readonly lcp: Int32Array;
  readonly bytes: readonly (Uint8Array | undefined)[];
  readonly vocabSize: number;

  private constructor(tokenizer: Tokenizer) {
    this.bytes = tokenizer.tokenBytes();
    this.vocabSize = tokenizer.vocabSize;
    const added = new Set(tokenizer.addedTokens.map((t) => t.id));
    const ids: number[] = [];
    this.bytes.forEach((b, id) => {
      if (b && b.length > 0 && !added.has(id)) ids.push(id);
    });
    ids.sort((a, b) => compareBytes(this.bytes[a]!, this.bytes[b]!) || a - b);
    this.order = Int32Array.from(ids);
    this.lcp = new Int32Array(ids.length);
    for (let k = 1; k < ids.length; k++) this.lcp[k] = commonPrefix(this.bytes[ids[k - 1]]!, this.bytes[ids[k]]!);
  }

  private static readonly cache = new WeakMap<Tokenizer, TokenIndex>();

  /** The index of a tokenizer, built once (about a second for a 151k vocabulary). */
  static of(tokenizer: Tokenizer): TokenIndex {
    let index = TokenIndex.cache.get(tokenizer);
    if (!index) {
      index = new TokenIndex(tokenizer);
      TokenIndex.cache.set(tokenizer, index);
    }
    return index;
  }

  /** 1 for each token whose every byte the grammar accepts from `start`. */
  allowedFrom(start: GrammarState): Uint8Array {
    const allowed = new Uint8Array(this.vocabSize);
    // states[d]: the state after the first d bytes of the current token; valid for d < valid.
    const states: (GrammarState | null)[] = [start];
    let valid = 1;
    for (let k = 0; k < this.order.length; k++) {
      const id = this.order[k];
      const bytes = this.bytes[id]!;
      valid = Math.min(valid, this.lcp[k] + 1);
      let d = valid - 1;
      let state = states[d];
      while (state !== null && d < bytes.length) {
        state = advance(state, bytes[d]);
        states[++d] = state;
      }
      valid = d + 1;
      if (state !== null) allowed[id] = 1;
    }
    return allowed;
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function commonPrefix(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
