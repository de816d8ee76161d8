/**
 * A pretraining checkpoint is tied to the recipe and to the rows its corpus generators write: a
 * generator that writes other rows for the same recipe (another version of the code) gives
 * another run hash, so a stopped run does not resume on a different corpus.
 */
import { before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ChatTemplate } from '#trainer/foundations/models/text/chatTemplate';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { CorpusContext } from '#trainer/bases/recipes/corpus/corpusContext';
import { BASE_RECIPE } from '#trainer/bases/recipes/recipe';
import { corpusFingerprint, pretrainRunHash } from '#trainer/bases/recipes/runHash';
import { qwen3TokenizerDir } from '#trainer/bases/recipes/tokenizerSource';

let context: CorpusContext;

before(() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'run-hash-tokenizer-'));
  truncateBpeTokenizer(qwen3TokenizerDir(), BASE_RECIPE.tokenizer.merges, dir);
  context = new CorpusContext(ChatTemplate.fromTokenizer(Tokenizer.load(dir)));
});

describe("a pretraining run's hash", () => {
  it('is the same for the same recipe and generators, and follows the recipe', () => {
    assert.equal(pretrainRunHash(BASE_RECIPE, context), pretrainRunHash(BASE_RECIPE, context));
    assert.notEqual(pretrainRunHash({ ...BASE_RECIPE, seed: 2 }, context), pretrainRunHash(BASE_RECIPE, context));
  });

  it('changes when the generators write other rows for the same recipe', () => {
    // What a code change to the random spans of the opening mix would do: other tokens drawn.
    const changed = Object.create(context, { asciiTokens: { value: context.asciiTokens.slice(1) } }) as CorpusContext;
    assert.notEqual(corpusFingerprint(BASE_RECIPE, changed), corpusFingerprint(BASE_RECIPE, context));
    assert.notEqual(pretrainRunHash(BASE_RECIPE, changed), pretrainRunHash(BASE_RECIPE, context));
  });

  it("hashes the main mix's first step when the recipe has no opening", () => {
    // Without an opening, step 1 is the main mix's; the episodes' separator stands in for a change there.
    const { openingMix, ...data } = BASE_RECIPE.data;
    assert.ok(openingMix, 'the base recipe has an opening');
    const noOpening = { ...BASE_RECIPE, data };
    const changed = Object.create(context, { endOfText: { value: context.endOfText - 1 } }) as CorpusContext;
    assert.notEqual(corpusFingerprint(noOpening, changed), corpusFingerprint(noOpening, context));
  });
});
