import * as crypto from 'node:crypto';
import type { CorpusContext } from './corpus/corpusContext';
import { packStep } from './corpus/mix';
import { dataForStep, recipeHash, type Recipe } from './recipe';

/**
 * What a pretraining checkpoint is tied to, so that a run resumes only on the data it started
 * with. The recipe (recipeHash) names the data — mixes, weights, rows, seed — but not the code of
 * the corpus generators that write the episodes: a change there changes every step's rows under
 * the same recipe, and a run resumed across it would train on two corpora without a word. So the
 * rows the generators give the first step of each phase (the opening mix, the main mix) are
 * hashed with the recipe. A change that leaves both of those steps' rows as they were goes
 * unseen; one that touches any generator in either mix does not.
 */
export function pretrainRunHash(recipe: Recipe, corpus: CorpusContext): string {
  return crypto
    .createHash('sha256')
    .update(recipeHash(recipe))
    .update(corpusFingerprint(recipe, corpus))
    .digest('hex')
    .slice(0, 16);
}

/** A hash of the packed rows (ids and loss weights) of the recipe's first step of each phase. */
export function corpusFingerprint(recipe: Recipe, corpus: CorpusContext): string {
  const opening = recipe.data.openingMix?.steps ?? 0;
  const hash = crypto.createHash('sha256');
  for (const step of opening > 0 ? [1, opening + 1] : [1]) {
    const { mix, rows, length } = dataForStep(recipe, step);
    for (const row of packStep(corpus, mix, recipe.data.weights, rows, length, recipe.seed, step)) {
      hash.update(Int32Array.from(row.ids));
      hash.update(row.weights);
    }
  }
  return hash.digest('hex').slice(0, 16);
}
