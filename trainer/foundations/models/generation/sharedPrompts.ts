/**
 * The distinct prompts of a session's first turn, and which one each row starts with. A GRPO group
 * samples one prompt several times: its prefill — most of a short turn's work — is then done once
 * and every row of the group starts from that cache (prefix caching, as vLLM does).
 *
 * Undefined when no two rows share a prompt (nothing to save) or a row cannot take part: one with
 * nothing to feed, or a single token (there is nothing to prefill before the last token, which
 * every row feeds itself so that it samples its own first token from its own position).
 */
export function sharedPrompts(
  chunks: readonly (readonly number[])[],
): { prompts: number[][]; source: number[] } | undefined {
  const index = new Map<string, number>();
  const prompts: number[][] = [];
  const source: number[] = [];
  for (const chunk of chunks) {
    if (chunk.length < 2) return undefined;
    const key = chunk.join(',');
    let i = index.get(key);
    if (i === undefined) {
      i = prompts.length;
      index.set(key, i);
      prompts.push([...chunk]);
    }
    source.push(i);
  }
  return prompts.length < chunks.length ? { prompts, source } : undefined;
}
