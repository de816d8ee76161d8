import type { Tokenizer } from '../models/tokenizer';

/** What replaces the cut part of a long observation; the policy sees it, so it knows text is missing. */
export type TruncationMarker = (omittedTokens: number) => string;

export const defaultTruncationMarker: TruncationMarker = (omitted) => `\n[… ${omitted} more tokens truncated]`;

export interface TruncatedText {
  text: string;
  truncated: boolean;
  /** Tokens of the text as it will be shown (marker included). */
  tokens: number;
}

/**
 * Cuts `text` to at most `maxTokens` tokens (counted on the text by itself), ending with the
 * marker. Cuts on token boundaries and drops a partial character at the cut.
 */
export function truncateToTokens(tokenizer: Tokenizer, text: string, maxTokens: number, marker: TruncationMarker = defaultTruncationMarker): TruncatedText {
  const ids = tokenizer.encode(text);
  if (ids.length <= maxTokens) return { text, truncated: false, tokens: ids.length };
  let keep = Math.max(0, maxTokens - tokenizer.encode(marker(ids.length)).length);
  // Token boundaries can shift where the kept text meets the marker; shrink until it fits.
  for (;;) {
    let head = tokenizer.decode(ids.slice(0, keep));
    while (head.endsWith('\ufffd')) head = head.slice(0, -1);
    const shown = head + marker(ids.length - keep);
    const count = tokenizer.encode(shown).length;
    if (count <= maxTokens || keep === 0) {
      if (count > maxTokens) throw new RangeError(`the truncation marker alone takes ${count} tokens, more than the ${maxTokens} allowed for a tool result`);
      return { text: shown, truncated: true, tokens: count };
    }
    keep--;
  }
}
