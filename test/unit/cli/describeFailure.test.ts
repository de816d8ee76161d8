import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { describeFailure } from '#trainer/bridges/cli/processEnd';
import { BlobIntegrityError } from '#trainer/foundations/models/hub/downloadBlob';

/** What a command prints for the error that ends it: the message alone when it says everything, the stack otherwise. */
describe('describeFailure', () => {
  it('prints a download that failed its check in words, without a stack', () => {
    const error = new BlobIntegrityError(
      'https://hub/x: expected 10 bytes, received 12; the partial file was deleted, pull again',
    );
    assert.equal(describeFailure(error), error.message);
    assert.match(describeFailure(error, true), /\n\s+at /, '--verbose keeps the stack');
  });

  it('keeps the stack of an error that is not one of ours', () => {
    assert.match(describeFailure(new TypeError('x is undefined')), /^TypeError: x is undefined\n\s+at /);
  });
});
