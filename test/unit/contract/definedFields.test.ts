import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { definedFields } from '#trainer/contract/definedFields';

describe('definedFields', () => {
  it('drops the undefined fields and keeps every other value, falsy ones included', () => {
    const fields = definedFields({ a: 1, b: undefined as string | undefined, c: 0, d: '', e: false, f: null });
    assert.deepStrictEqual(fields, { a: 1, c: 0, d: '', e: false, f: null });
    assert.equal('b' in fields, false);
  });

  it('types a field that may be undefined as optional, so it fits an exact optional property', () => {
    const name: string | undefined = undefined;
    const call: { index: number; name?: string } = definedFields({ index: 2, name });
    assert.deepStrictEqual(call, { index: 2 });
  });
});
