import type { Tokenizer } from '../../foundations/models/text/tokenizer';

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
export function truncateToTokens(
  tokenizer: Tokenizer,
  text: string,
  maxTokens: number,
  marker: TruncationMarker = defaultTruncationMarker,
): TruncatedText {
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
      if (count > maxTokens)
        throw new RangeError(
          `the truncation marker alone takes ${count} tokens, more than the ${maxTokens} allowed for a tool result`,
        );
      return { text: shown, truncated: true, tokens: count };
    }
    keep--;
  }
}

/**
 * Cuts a short text (an error observation) to at most `maxTokens` tokens by dropping its end
 * for an ellipsis — no truncation marker, which on a small tool-result budget would take the room
 * the message needs. Error observations are written to fit (errorObservation.ts); this is the
 * guard for a budget smaller still.
 */
export function fitToTokens(tokenizer: Tokenizer, text: string, maxTokens: number): TruncatedText {
  const count = tokenizer.encode(text).length;
  if (count <= maxTokens) return { text, truncated: false, tokens: count };
  // The longest prefix (by characters) that fits with the ellipsis: binary search.
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (tokenizer.encode(`${text.slice(0, mid)}…`).length <= maxTokens) low = mid;
    else high = mid - 1;
  }
  const shown = `${text.slice(0, low)}…`;
  return { text: shown, truncated: true, tokens: tokenizer.encode(shown).length };
}
