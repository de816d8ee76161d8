/**
 * Which rows of a generation call share a prompt prefill (sharedPrompts.ts): fresh rows with a
 * prompt of two tokens or more, once some prompt is shared; each distinct prompt once.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { planSharedPrefill } from '#trainer/foundations/models/generation/sharedPrompts';

describe('planSharedPrefill', () => {
  it('prefills each distinct prompt once, without its last token, and maps every row to it', () => {
    const plan = planSharedPrefill(
      [
        [1, 2, 3],
        [7, 8],
        [1, 2, 3],
        [1, 2, 3],
        [7, 8],
        [4, 5, 6, 9],
      ],
      [true, true, true, true, true, true],
    );
    assert.deepEqual(plan, {
      prefixes: [[1, 2], [7], [4, 5, 6]],
      rowPrefix: [0, 1, 0, 0, 1, 2],
    });
  });

  it('leaves out rows under way, rows not in the call and one-token chunks', () => {
    const plan = planSharedPrefill(
      [[1, 2, 3], [1, 2, 3], [1, 2, 3], [], [5], [5]],
      [true, false, true, true, true, true],
    );
    assert.deepEqual(plan, { prefixes: [[1, 2]], rowPrefix: [0, -1, 0, -1, -1, -1] });
  });

  it('shares nothing when no prompt is shared by two fresh rows', () => {
    assert.equal(
      planSharedPrefill(
        [
          [1, 2],
          [1, 3],
          [1, 2],
        ],
        [true, true, false],
      ),
      undefined,
    );
    assert.equal(planSharedPrefill([[1], [1]], [true, true]), undefined);
  });
});
