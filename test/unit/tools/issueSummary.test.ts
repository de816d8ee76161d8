import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { summarizeIssues } from '#trainer/foundations/tools/issueSummary';

const convert = z.object({
  value: z.number(),
  from: z.enum(['km', 'm', 'mi', 'ft']),
  to: z.enum(['km', 'm', 'mi', 'ft']),
  note: z.string().max(3).optional(),
});
const summary = (args: unknown, limit?: number) => {
  const parsed = convert.safeParse(args);
  assert.ok(!parsed.success);
  return summarizeIssues(parsed.error.issues, args, limit);
};

describe('schema issues in a few words', () => {
  it('names the key and what was wrong: missing, not one of the enum, the wrong type, too long', () => {
    assert.equal(summary({ value: 23.8, from: 'km' }), '"to" is missing');
    assert.equal(summary({ value: 1, from: 'km', to: 'cmi' }), '"cmi" is not one of km, m, mi, ft');
    assert.equal(summary({ value: '1', from: 'km', to: 'm' }), '"value" must be a number');
    assert.equal(summary({ value: 1, from: 'km', to: 'm', note: 'long' }), '"note" must be at most 3 characters');
    assert.equal(summary([1]), 'the arguments must be an object');
  });

  it('keeps to the first issues and counts the rest', () => {
    assert.equal(summary({}), '"value" is missing; 2 more issues');
    assert.equal(summary({}, 2), '"value" is missing; "from" is missing; 1 more issue');
  });
});
