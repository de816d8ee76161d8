import { serializeGraph } from '../../foundations/engine/serialize';
import type { HostTensor } from '../../foundations/engine/runtime/tensors';
import type { ModelRuntime } from '../../foundations/models/runtime';
import { buildScoringGraph, type ScoringSession } from '../../foundations/models/scoring';
import { packSequences } from './batching';
import type { SftSequence } from './sft';
import { definedFields } from '../../contract/definedFields';

/**
 * How well a model reproduces demonstrations, teacher-forced: each demonstration scored in one
 * forward pass, and an assistant turn counts as reproduced when every one of its tokens is the
 * model's greedy choice given the demonstration before it — what greedy decoding would write at
 * that point of the conversation. The warm start runs it after each epoch: a loss alone hides a
 * tool-call argument the model has not learned (one wrong token in forty barely moves it), and a
 * policy that cannot yet write its task's calls gives RL groups that are all wrong.
 */

export interface TurnCount {
  right: number;
  total: number;
}

/** The first tool-call turn the model did not reproduce: where, and what it would write instead. */
export interface CallMiss {
  /** Index of the demonstration in the checked list. */
  demonstration: number;
  /** Where it came from ("sft.jsonl:213"), when known. */
  source?: string;
  /** The turn's tokens up to and including the first token the model gets wrong. */
  expected: number[];
  /** The same prefix with the model's greedy token in place of the last. */
  wrote: number[];
}

export interface DemonstrationScore {
  demonstrations: number;
  /** Nats per trained token. */
  loss: number;
  /** Assistant turns with tool calls. */
  callTurns: TurnCount;
  /** Assistant turns without (answers, plain text). */
  textTurns: TurnCount;
  firstCallMiss?: CallMiss;
}

export class DemonstrationCheck {
  /** One graph for batches that share a prefix (the system prompt, given once) and one for those that do not. */
  private readonly sessions = new Map<boolean, ScoringSession>();

  constructor(
    private readonly model: ModelRuntime,
    private readonly microBatchSize: number,
  ) {}

  private async load(sharedPrefix: boolean) {
    let session = this.sessions.get(sharedPrefix);
    if (!session) {
      const graph = buildScoringGraph(
        this.model.config,
        {
          dtype: 'float32',
          lora: this.model.options.lora,
          quantized: this.model.quantized,
          sharedPrefix,
          greedy: true,
        },
        'demonstration_check',
      );
      graph.graph.output(graph.logprobs, 'logprobs');
      graph.graph.output(graph.greedy!, 'greedy');
      session = {
        id: await this.model.device.load({ model: serializeGraph(graph.graph), settings: { memoryArena: false } }),
        weights: graph.weights,
      };
      this.sessions.set(sharedPrefix, session);
    }
    return session;
  }

  async score(sequences: readonly SftSequence[]): Promise<DemonstrationScore> {
    let nll = 0;
    let tokens = 0;
    const callTurns: TurnCount = { right: 0, total: 0 };
    const textTurns: TurnCount = { right: 0, total: 0 };
    let firstCallMiss: CallMiss | undefined;
    for (let start = 0; start < sequences.length; start += this.microBatchSize) {
      const chunk = sequences.slice(start, start + this.microBatchSize);
      const packed = packSequences(
        chunk,
        chunk.map((s) => s.mask),
        this.model.config.vision,
      );
      const { id, weights } = await this.load(packed.prefix > 0);
      const feeds: Record<string, HostTensor> = {
        ...packed.feeds,
        ...this.model.loraScaleFeed(true),
        ...this.model.weightFeeds(weights),
        inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
      };
      const out = await this.model.device.run(id, feeds, { logprobs: 'return', greedy: 'return' });
      const logprobs = out.logprobs.data as Float32Array;
      const greedy = out.greedy.data as Float32Array;
      chunk.forEach((sequence, b) => {
        // The packed row holds the sequence after the batch's shared prefix, which is never scored.
        const row = b * packed.length - packed.prefix;
        const turnOf = sequence.turns?.of;
        const turnRight = new Map<number, boolean>();
        for (let t = packed.prefix; t < sequence.ids.length; t++) {
          if (!sequence.mask[t]) continue;
          nll -= logprobs[row + t];
          tokens++;
          const right = greedy[row + t] === sequence.ids[t];
          const turn = turnOf ? turnOf[t] : 1;
          if (!turnRight.has(turn)) turnRight.set(turn, true);
          if (!right && turnRight.get(turn)) {
            turnRight.set(turn, false);
            const isCall = sequence.turns?.calls[turn - 1] ?? false;
            if (isCall && !firstCallMiss) {
              let from = t;
              while (from > 0 && turnOf?.[from - 1] === turn) from--;
              const expected = sequence.ids.slice(from, t + 1);
              firstCallMiss = {
                demonstration: start + b,
                ...definedFields({ source: sequence.source || undefined }),
                expected,
                wrote: [...expected.slice(0, -1), greedy[row + t]],
              };
            }
          }
        }
        for (const [turn, right] of turnRight) {
          const count = sequence.turns?.calls[turn - 1] ? callTurns : textTurns;
          count.total++;
          if (right) count.right++;
        }
      });
    }
    return {
      demonstrations: sequences.length,
      loss: nll / Math.max(1, tokens),
      callTurns,
      textTurns,
      ...definedFields({ firstCallMiss }),
    };
  }

  async release(): Promise<void> {
    for (const { id } of this.sessions.values()) await this.model.device.release(id);
    this.sessions.clear();
  }
}
