import { serializeGraph } from '../../foundations/engine/serialize';
import type { HostTensor } from '../../foundations/engine/runtime/tensors';
import { packForScoring } from '../../foundations/models/batch';
import type { ModelRuntime } from '../../foundations/models/runtime';
import { buildScoringGraph, type ScoringSession } from '../../foundations/models/scoring';
import { Random } from '../../foundations/models/random';
import { chainEpisode, chatAnswerEpisode, toolEpisode } from './corpus/chatEpisodes';
import type { CorpusContext } from './corpus/corpusContext';
import { factChainEpisode } from './corpus/factChainEpisodes';
import { ROLE_ID, SKILLS, type CorpusEpisode, type Skill } from './corpus/episode';
import type { LossWeights } from './corpus/mix';
import { inductionEpisode, lookupEpisode, repeatEpisode, type CopyFocus } from './corpus/textEpisodes';

/**
 * Held-out evaluation of pretraining: fixed sets of episodes drawn from a seed no training step
 * uses, scored in one forward pass each. Per skill, teacher-forced exact match — the share of
 * copy targets (a repeated span, a looked-up value, a tool call, an answer) whose every token is
 * the model's greedy choice, which is what greedy decoding would write given the same prefix —
 * and the held-out losses: nats per target token, per text token, and the recipe's weighted mix
 * of the two (the number a rerun of the recipe must reproduce).
 */

export interface HeldoutResult {
  /** Exact match per skill, 0–1. */
  exactMatch: Partial<Record<Skill, number>>;
  /**
   * Per skill, the share of target tokens that are the greedy choice, 0–1: copying shows here
   * (a few digits right) long before whole spans are exact.
   */
  tokenAccuracy: Partial<Record<Skill, number>>;
  /** Per skill, the mean NLL of its target tokens. */
  targetLossBySkill: Partial<Record<Skill, number>>;
  /** Mean NLL of target tokens. */
  targetLoss: number;
  /** Mean NLL of text tokens. */
  textLoss: number;
  /** Σ w·NLL / Σ w with the recipe's weights (no sampling). */
  loss: number;
  episodes: number;
}

/** The sets: episode kinds chosen so every skill is measured, `perSet` episodes each. */
export function heldoutEpisodes(context: CorpusContext, seed: number, perSet: number): CorpusEpisode[] {
  const sets: Array<(r: Random) => CorpusEpisode> = [
    ...(['number', 'name', 'string', 'span'] as CopyFocus[]).map(
      (focus) => (r: Random) =>
        r.nextFloat() < 0.5 ? repeatEpisode(context, r, focus) : inductionEpisode(context, r, focus),
    ),
    (r) => lookupEpisode(context, r),
    (r) => chatAnswerEpisode(context, r),
    (r) => toolEpisode(context, r),
    (r) => chainEpisode(context, r),
    (r) => factChainEpisode(context, r),
  ];
  return sets.flatMap((make, i) => {
    const random = Random.fromSeed(seed * 7_919 + i);
    return Array.from({ length: perSet }, () => make(random));
  });
}

export class HeldoutEvaluator {
  private session: ScoringSession | undefined;

  constructor(
    private readonly model: ModelRuntime,
    readonly episodes: readonly CorpusEpisode[],
    private readonly weights: LossWeights,
    private readonly batchSize = 8,
  ) {}

  private async load() {
    if (!this.session) {
      const graph = buildScoringGraph(this.model.config, { dtype: 'float32', argmaxGap: true }, 'pretrain_heldout');
      graph.graph.output(graph.logprobs, 'logprobs');
      graph.graph.output(graph.argmaxGap!, 'argmax_gap');
      this.session = {
        id: await this.model.device.load({ model: serializeGraph(graph.graph), settings: {} }),
        weights: graph.weights,
      };
    }
    return this.session;
  }

  async evaluate(): Promise<HeldoutResult> {
    const { id, weights } = await this.load();
    const spans = new Map<Skill, { right: number; total: number }>();
    const tokens = new Map<Skill, { right: number; total: number; nll: number }>();
    let targetNll = 0;
    let targets = 0;
    let textNll = 0;
    let texts = 0;
    // Longest first would pad least; any fixed order gives the same numbers.
    for (let start = 0; start < this.episodes.length; start += this.batchSize) {
      const chunk = this.episodes.slice(start, start + this.batchSize);
      const scored = chunk.map((e) => Uint8Array.from(e.roles, (r, t) => (t > 0 && r !== ROLE_ID.hidden ? 1 : 0)));
      const packed = packForScoring(
        chunk.map((e) => e.ids),
        scored,
      );
      const feeds: Record<string, HostTensor> = {
        ...packed.feeds,
        inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
      };
      const out = await this.model.device.run(
        id,
        { ...feeds, ...this.model.weightFeeds(weights) },
        { logprobs: 'return', argmax_gap: 'return' },
      );
      const logprobs = out.logprobs.data as Float32Array;
      const gaps = out.argmax_gap.data as Float32Array;
      chunk.forEach((episode, b) => {
        const row = b * packed.length;
        let spanSkill = 0;
        let spanRight = true;
        const close = () => {
          if (spanSkill === 0) return;
          const skill = SKILLS[spanSkill - 1];
          const s = spans.get(skill) ?? { right: 0, total: 0 };
          s.total++;
          if (spanRight) s.right++;
          spans.set(skill, s);
          spanSkill = 0;
        };
        for (let t = 1; t < episode.ids.length; t++) {
          const role = episode.roles[t];
          if (role === ROLE_ID.target) {
            targetNll -= logprobs[row + t];
            targets++;
            if (episode.skills[t] > 0) {
              const skill = SKILLS[episode.skills[t] - 1];
              const perToken = tokens.get(skill) ?? { right: 0, total: 0, nll: 0 };
              perToken.total++;
              perToken.nll -= logprobs[row + t];
              if (gaps[row + t] <= 0) perToken.right++;
              tokens.set(skill, perToken);
            }
            if (episode.skills[t] !== spanSkill) {
              close();
              spanSkill = episode.skills[t];
              spanRight = true;
            }
            if (gaps[row + t] > 0) spanRight = false;
          } else {
            close();
            if (role === ROLE_ID.text) {
              textNll -= logprobs[row + t];
              texts++;
            }
          }
        }
        close();
      });
    }
    const targetLoss = targetNll / Math.max(1, targets);
    const textLoss = textNll / Math.max(1, texts);
    const loss =
      (this.weights.target * targetNll + this.weights.text * textNll) /
      Math.max(1e-12, this.weights.target * targets + this.weights.text * texts);
    const exactMatch = Object.fromEntries([...spans].map(([skill, s]) => [skill, s.right / s.total]));
    const tokenAccuracy = Object.fromEntries([...tokens].map(([skill, s]) => [skill, s.right / s.total]));
    const targetLossBySkill = Object.fromEntries([...tokens].map(([skill, s]) => [skill, s.nll / s.total]));
    return { exactMatch, tokenAccuracy, targetLossBySkill, targetLoss, textLoss, loss, episodes: this.episodes.length };
  }

  async release(): Promise<void> {
    if (this.session) await this.model.device.release(this.session.id);
    this.session = undefined;
  }
}
