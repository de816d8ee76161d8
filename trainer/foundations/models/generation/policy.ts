/**
 * The seam between the agent loop and the model: a policy generates turns for a batch of
 * sequences, token in and token out. The loop owns every token: it appends exactly the tokens
 * it wants in the context (the prompt, later the rendered tool results) and receives exactly
 * the tokens the policy sampled, with their log-probs. Nothing is ever re-tokenised.
 *
 * The model implementation (GenerationSession, next to this file) keeps each sequence's KV cache
 * between calls, so appending tool results costs only the new tokens. The contract lives with the
 * models so that the agent loop (trainer/pipeline/rollout) depends on the models and not the other way round.
 */

export interface SamplingOptions {
  /** 0 means greedy. */
  temperature: number;
  /** Keep only the k most likely tokens; 0: no limit. */
  topK: number;
  /** Keep the smallest set of tokens whose probability reaches p; 1: no limit. */
  topP: number;
}

export interface TurnOptions extends SamplingOptions {
  /** New tokens this turn may add per sequence; reaching it ends the turn with finish `length`. */
  maxNewTokens: number;
  /** Token ids that end the turn and are kept as its last token (EOS, `<|im_end|>`, …). */
  stopTokenIds: readonly number[];
  /** Strings that end the turn once the decoded turn text contains them (the tokens up to and including the one completing the string are kept). */
  stopStrings?: readonly string[];
  /** Called with each sampled token as it is produced (streaming to a terminal or a panel). */
  onToken?: (sequence: number, token: number) => void;
}

/** An image a vision-language policy sees: its identity (content hash), patch grid and patches. */
export interface TurnImage {
  key: string;
  grid: readonly [number, number, number];
  patches: Float32Array;
}

/**
 * The tokens a constrained position may take (a grammar's mask): `allowed[id]` is 1 for each one;
 * ids at or past `allowed.length` are not allowed. Made once per grammar state and shared, so
 * the same object stands for the same set (the session and the scorer cache by identity).
 */
export interface AllowedTokens {
  readonly allowed: Uint8Array;
}

/**
 * What a sequence may sample, decided token by token (schema-constrained tool calls): before each
 * sampled token the session asks `next()` — undefined leaves the position free — and after it
 * reports the token with `accept`. The sampled distribution is the policy's renormalised over the
 * allowed tokens, and the returned log-prob and entropy are of that distribution.
 */
export interface SequenceConstraint {
  next(): AllowedTokens | undefined;
  accept(token: number): void;
}

export interface TurnRequest {
  /** The sequence (trajectory slot) in this session. */
  sequence: number;
  /** Restricts what this turn may sample (see SequenceConstraint); absent: free. */
  constraint?: SequenceConstraint;
  /** Tokens to append to the sequence's context before generating (prompt, tool results, template text). */
  append: readonly number[];
  /** Vision-language policies: the images whose `<|image_pad|>` runs are in `append`, in order. */
  images?: readonly TurnImage[];
  /** This sequence's limit on new tokens when it is lower than the call's `maxNewTokens` (a sequence near its total budget). */
  maxNewTokens?: number;
}

export interface GeneratedTurn {
  sequence: number;
  /** The sampled tokens, the stop token included when the turn ended on one. */
  tokens: number[];
  /**
   * Log-prob of each sampled token under the policy, log softmax(logits / temperature) over the
   * allowed tokens where a constraint restricted the position — the same quantity the training
   * graph recomputes under the same masks (it is not renormalised by top-k/top-p).
   */
  logprobs: number[];
  /** Entropy of the policy's distribution at each sampled position. */
  entropies: number[];
  finish: 'stop_token' | 'stop_string' | 'length';
}

export interface PolicySession {
  /** Generate one turn for each requested sequence (others stay as they are). */
  generate(requests: readonly TurnRequest[], options: TurnOptions): Promise<GeneratedTurn[]>;
  /**
   * Starts a sequence over, empty, as if new (an agent that rewrote its history goes on from a new
   * prompt in the same slot): what it held before is no longer attended to.
   */
  resetSequence?(sequence: number): void;
  close(): Promise<void>;
}

/**
 * Where a session's sampling randomness comes from, when not from its seed: one uniform per row
 * per decoding step, asked in row order; `generating` says whether the row samples a token it
 * keeps at this step (rows that are not generating get a value that is ignored). A re-roll uses
 * it to give a sequence the numbers it drew inside its original batch (rollout/samplingSchedule.ts).
 */
export interface UniformSource {
  next(row: number, generating: boolean): number;
}

export interface SessionOptions {
  /** Replaces the seeded stream (the seed is then unused). */
  uniforms?: UniformSource;
}

export interface Policy {
  /** A session of `sequences` slots; `seed` makes its sampling reproducible. */
  startSession(sequences: number, seed: number, options?: SessionOptions): Promise<PolicySession>;
  /**
   * Frees what the policy holds between its sessions (a model's loaded generation graphs, with
   * their packed copy of the weights); the next session loads it again.
   */
  release?(): Promise<void>;
}
