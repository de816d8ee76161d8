import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { defaultErrorObservation } from '#trainer/pipeline/rollout/errorObservation';
import { fitToTokens, truncateToTokens } from '#trainer/pipeline/rollout/truncate';

const tokenizer = Tokenizer.load(path.resolve(__dirname, '../../../trainer/bases/weights/base'));

describe('error observations on a small tool-result budget', () => {
  const error = defaultErrorObservation({
    kind: 'invalid_arguments',
    tool: 'convert',
    message: 'arguments of convert do not match its schema: …',
    summary: '"cmi" is not one of km, m, mi, ft',
  });

  it('are short enough to be shown whole on the tutorial budget (32 tokens)', () => {
    assert.equal(error, 'Error: convert arguments: "cmi" is not one of km, m, mi, ft');
    assert.deepEqual(fitToTokens(tokenizer, error, 32), {
      text: error,
      truncated: false,
      tokens: tokenizer.encode(error).length,
    });
  });

  it('are shortened with an ellipsis, never cut to a truncation marker, when the budget is smaller still', () => {
    const fitted = fitToTokens(tokenizer, error, 20);
    assert.ok(fitted.truncated && fitted.tokens <= 20, JSON.stringify(fitted));
    assert.ok(fitted.text.endsWith('…') && error.startsWith(fitted.text.slice(0, -1)), fitted.text);
    assert.ok(fitted.text.length > 20, 'most of the budget holds the message');
    // What the marker would have left of it: 'Error' and the marker (16 tokens on this vocabulary).
    assert.match(truncateToTokens(tokenizer, error, 20).text, /^.{0,10}\n\[… \d+ more tokens truncated\]$/);
  });
});
