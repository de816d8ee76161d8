/**
 * Answer normalisation as the SQuAD evaluation script (and HotpotQA, and Agent-R1's multi-hop
 * QA scoring after it) does it: lowercase, remove ASCII punctuation, remove the articles
 * "a", "an", "the", collapse whitespace. Exact match and F1 compare normalised answers.
 */

/** ASCII punctuation, Python's `string.punctuation`. One pass of a replace, not a string built a character at a time. */
const PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

export function normalizeAnswer(text: string): string {
  const withoutPunctuation = text.toLowerCase().replace(PUNCTUATION, '');
  const withoutArticles = withoutPunctuation.replace(/\b(a|an|the)\b/g, ' ');
  return withoutArticles.split(/\s+/).filter(Boolean).join(' ');
}

export function answerTokens(text: string): string[] {
  const normalized = normalizeAnswer(text);
  return normalized ? normalized.split(' ') : [];
}

/** SQuAD token F1 between a prediction and one gold answer. Two empty answers agree (1); one empty one does not (0). */
export function tokenF1(prediction: string, gold: string): number {
  const predicted = answerTokens(prediction);
  const expected = answerTokens(gold);
  if (predicted.length === 0 || expected.length === 0) return predicted.length === expected.length ? 1 : 0;
  const counts = new Map<string, number>();
  for (const token of expected) counts.set(token, (counts.get(token) ?? 0) + 1);
  let common = 0;
  for (const token of predicted) {
    const left = counts.get(token) ?? 0;
    if (left > 0) {
      common++;
      counts.set(token, left - 1);
    }
  }
  if (common === 0) return 0;
  const precision = common / predicted.length;
  const recall = common / expected.length;
  return (2 * precision * recall) / (precision + recall);
}
