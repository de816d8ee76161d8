import { z } from 'zod';
import { Random } from '../../../foundations/models/random';
import { chainEpisode, chatAnswerEpisode, multiTurnEpisode, plainRequestEpisode, toolEpisode } from './chatEpisodes';
import type { CorpusContext } from './corpusContext';
import { factChainEpisode } from './factChainEpisodes';
import { ROLE_ID, type CorpusEpisode } from './episode';
import { inductionEpisode, lookupEpisode, proseEpisode, repeatEpisode } from './textEpisodes';

/**
 * The corpus mix: which episode kinds, in what proportions, and how a training step's rows are
 * packed from them. Every row of every step is a pure function of (seed, step, row), so a run
 * is reproducible and resumes without saving any data position.
 */

export const EPISODE_KINDS = {
  repeat: (c: CorpusContext, r: Random) => repeatEpisode(c, r),
  /** Random-token spans repeated: nothing but copying predicts them (an induction head's first lesson). */
  repeat_span: (c: CorpusContext, r: Random) => repeatEpisode(c, r, 'span'),
  induction: (c: CorpusContext, r: Random) => inductionEpisode(c, r),
  lookup: lookupEpisode,
  prose: proseEpisode,
  chat: chatAnswerEpisode,
  tool: toolEpisode,
  chain: chainEpisode,
  /** Calls from requests in plain words (no parameter names; "from … to …"). */
  plain_request: plainRequestEpisode,
  multi_turn: multiTurnEpisode,
  /** Two to four calls, each argument read out of the last result beside near misses (former holders, namesakes). */
  fact_chain: factChainEpisode,
} as const satisfies Record<string, (context: CorpusContext, random: Random) => CorpusEpisode>;
export type EpisodeKind = keyof typeof EPISODE_KINDS;

export const Mix = z
  .partialRecord(z.enum(Object.keys(EPISODE_KINDS) as [EpisodeKind, ...EpisodeKind[]]), z.number().min(0))
  .refine((m) => Object.values(m).some((v) => v > 0), 'at least one episode kind needs a positive share');
export type Mix = z.infer<typeof Mix>;

export const LossWeights = z.strictObject({
  /** Copy targets and the assistant's turns. */
  target: z.number().positive(),
  /** Other text (prose, user turns, tool results). */
  text: z.number().min(0),
  /**
   * Tokens of weight below 1 are scored with this probability, at weight / probability: the
   * same expected loss with fewer vocabulary rows computed (the LM head is a large part of a
   * small model's step).
   */
  sampleBelowOne: z.number().gt(0).max(1),
});
export type LossWeights = z.infer<typeof LossWeights>;

export function sampleKind(mix: Mix, random: Random): EpisodeKind {
  const entries = Object.entries(mix) as [EpisodeKind, number][];
  const total = entries.reduce((a, [, v]) => a + v, 0);
  let r = random.nextFloat() * total;
  for (const [kind, share] of entries) {
    if (r < share) return kind;
    r -= share;
  }
  return entries.at(-1)![0];
}

/** A packed training row: token ids and per-token loss weights (0 = not scored). */
export interface PackedRow {
  ids: number[];
  weights: Float32Array;
}

/** Seeds of independent streams: one per (seed, step, row). */
export function streamSeed(seed: number, step: number, row: number): number {
  return (seed * 1_000_003 + step * 8_191 + row * 131 + 7) % Number.MAX_SAFE_INTEGER;
}

/** Seeds of independent streams: one per (seed, step). */
export function stepSeed(seed: number, step: number): number {
  return (seed * 1_000_003 + step * 8_191 + 7) % Number.MAX_SAFE_INTEGER;
}

/**
 * A step's rows of `length` tokens each: whole episodes, each after an `<|endoftext|>`, packed
 * first-fit — an episode that does not fit in a row's remaining space waits for the next row,
 * and a row's last gap is filled with the start of a prose episode — so no copy target is cut
 * off (an episode longer than a row is dropped). Weights come from the tokens' roles; tokens
 * below weight 1 are sampled (see LossWeights.sampleBelowOne).
 */
export function packStep(
  context: CorpusContext,
  mix: Mix,
  weights: LossWeights,
  rows: number,
  length: number,
  seed: number,
  step: number,
): PackedRow[] {
  const random = Random.fromSeed(stepSeed(seed, step));
  const byRole = [0, weights.text, weights.target];
  const waiting: CorpusEpisode[] = [];
  const out: PackedRow[] = [];
  for (let r = 0; r < rows; r++) {
    const ids: number[] = [];
    const w: number[] = [];
    const add = (episode: CorpusEpisode, limit: number) => {
      ids.push(context.endOfText);
      w.push(0);
      for (let t = 0; t < episode.ids.length && ids.length < limit; t++) {
        ids.push(episode.ids[t]);
        let weight = byRole[episode.roles[t]];
        if (weight > 0 && weight < 1 && weights.sampleBelowOne < 1)
          weight = random.nextFloat() < weights.sampleBelowOne ? weight / weights.sampleBelowOne : 0;
        w.push(weight);
      }
    };
    // Episodes carried over from the last row go first, then new ones, while a gap of a useful size is left.
    let tries = 0;
    while (length - ids.length > 48 && tries < 8) {
      const episode =
        waiting.length && waiting[0].ids.length + 1 <= length - ids.length
          ? waiting.shift()!
          : EPISODE_KINDS[sampleKind(mix, random)](context, random);
      if (episode.ids.length + 1 <= length - ids.length) add(episode, length);
      else {
        if (episode.ids.length + 1 <= length && waiting.length < rows) waiting.push(episode);
        tries++;
      }
    }
    while (ids.length < length) add(proseEpisode(context, random), length);
    // The row's first token is never scored (nothing predicts it).
    w[0] = 0;
    out.push({ ids, weights: Float32Array.from(w) });
  }
  return out;
}

export { ROLE_ID };
