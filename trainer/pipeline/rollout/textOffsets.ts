import type { Tokenizer } from '../../foundations/models/text/tokenizer';

/**
 * Maps character offsets of a decoded token sequence back to token positions, so that a tool
 * call found in a turn's text can be pinned to the token that completes it.
 *
 * It decodes prefixes (binary search: about log2(n) decodes per lookup) rather than summing
 * per-token pieces, because a token can hold part of a UTF-8 character: a prefix that ends inside
 * a character decodes with a trailing U+FFFD, which is dropped before measuring.
 */
export class TextOffsets {
  private readonly lengths = new Map<number, number>();

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly ids: readonly number[],
  ) {}

  /** Length of the decoded text of the first `count` tokens, without a trailing partial character. */
  private prefixLength(count: number): number {
    let length = this.lengths.get(count);
    if (length === undefined) {
      const text = this.tokenizer.decode(this.ids.slice(0, count));
      let end = text.length;
      while (end > 0 && text.charCodeAt(end - 1) === 0xfffd) end--;
      length = end;
      this.lengths.set(count, length);
    }
    return length;
  }

  /** The position of the token whose text contains character `offset` (0-based); the last token for offsets past the end. */
  tokenAt(offset: number): number {
    let lo = 1;
    let hi = this.ids.length;
    if (hi === 0) throw new RangeError('TextOffsets: no tokens');
    // Smallest count whose decoded prefix covers offset + 1 characters.
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.prefixLength(mid) > offset) hi = mid;
      else lo = mid + 1;
    }
    return lo - 1;
  }
}
