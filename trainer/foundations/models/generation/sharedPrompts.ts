/**
 * Which rows of a generation call start from the same prompt, so that it is prefilled once (as
 * vLLM shares a prompt's KV cache between the samples of a request): the samples of a GRPO group
 * all open with their row's prompt, ~300 tokens of system prompt, tool schemas and question.
 *
 * Each distinct prompt's tokens but its last are prefilled at one row of the batch; every row of
 * the prompt then gets those keys and values, and its last token goes through the call's first
 * decoding step as a one-token chunk, so that each row still samples its first token with its own
 * uniform, exactly where it would have without sharing.
 */
export interface SharedPrefill {
  /** The distinct prompts' tokens but the last, in the order of their first row. */
  prefixes: number[][];
  /** Per row of the session: the index of its prompt in `prefixes`, or −1 for a row not prefilled. */
  rowPrefix: number[];
}

/**
 * The plan for a call's chunks: every row that has not been extended yet (`fresh`) and appends at
 * least two tokens takes part, once some prompt is shared by two or more of them (otherwise
 * nothing is shared and the call runs as before). Rows with a prompt of their own take part too:
 * left out, their whole prompts would widen the call's first step to the longest prompt for every
 * row of the batch.
 */
export function planSharedPrefill(
  chunks: readonly (readonly number[])[],
  fresh: readonly boolean[],
): SharedPrefill | undefined {
  const byPrompt = new Map<string, number>();
  const prefixes: number[][] = [];
  const rows: number[] = [];
  const rowPrefix = chunks.map((chunk, b) => {
    if (!fresh[b] || chunk.length < 2) return -1;
    const key = chunk.join(',');
    let index = byPrompt.get(key);
    if (index === undefined) {
      index = prefixes.length;
      byPrompt.set(key, index);
      prefixes.push(chunk.slice(0, -1));
      rows.push(0);
    }
    rows[index]++;
    return index;
  });
  return rows.some((n) => n > 1) ? { prefixes, rowPrefix } : undefined;
}
