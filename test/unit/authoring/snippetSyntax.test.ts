import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { resolveSnippet } from '../../../extension/authoring/snippetSyntax';
import { argumentSkeleton, parseArgumentText } from '../../../extension/authoring/argumentText';
import { camelCase, indentLike, pascalCase, snakeCase } from '../../../extension/authoring/templates';

describe('snippet syntax', () => {
  it('resolves defaults, mirrors (first definition wins), nested placeholders, choices and the final tab stop', () => {
    assert.equal(resolveSnippet('${1:Foo}Bar $1 ${1} ${2:x ${3:y}} $3 ${4|grpo,ppo|}$0'), 'FooBar Foo Foo x y y grpo');
    assert.equal(resolveSnippet(['a${1}', 'b$2']), 'a\nb');
  });

  it('fills placeholders by index everywhere they appear, and variables by name or default', () => {
    assert.equal(resolveSnippet('${1:A}-${2:b}-$1', { values: { 1: 'Z' } }), 'Z-b-Z');
    assert.equal(
      resolveSnippet('${TM_FILENAME_BASE:data}.ts $TM_FILENAME_BASE', { variables: { TM_FILENAME_BASE: 'gen' } }),
      'gen.ts gen',
    );
    assert.equal(resolveSnippet('${TM_FILENAME_BASE:data}.ts'), 'data.ts');
    assert.throws(() => resolveSnippet('$UNKNOWN_VARIABLE'), /\$UNKNOWN_VARIABLE has no value and no default/);
  });

  it('keeps escaped and plain dollars and braces, and refuses what it does not support', () => {
    assert.equal(resolveSnippet('\\$1 costs $ 5 \\} ${1:a\\}b}'), '$1 costs $ 5 } a}b');
    assert.equal(resolveSnippet('${1|a\\,b,c|}'), 'a,b');
    assert.throws(() => resolveSnippet('${1/(.*)/${1:/upcase}/}'), /transforms are not supported/);
    assert.throws(() => resolveSnippet('${1:open'), /not closed/);
  });

  it('turns names into identifiers', () => {
    assert.equal(pascalCase('web-search'), 'WebSearch');
    assert.equal(pascalCase('webSearch'), 'WebSearch');
    assert.equal(camelCase('exact_answer'), 'exactAnswer');
    assert.equal(camelCase('3d-lookup'), '_3dLookup');
    assert.equal(snakeCase('exactAnswer'), 'exact_answer');
    assert.equal(indentLike('a\n\tb\n\t\tc', true, 2), 'a\n  b\n    c');
    assert.equal(indentLike('\tb', false, 2), '\tb');
  });
});

describe('Run Tool… argument text', () => {
  it('starts from the required fields of the JSON Schema', () => {
    const schema = {
      type: 'object',
      properties: {
        query: { type: 'string' },
        k: { type: 'integer', minimum: 1 },
        mode: { enum: ['fast', 'slow'] },
        deep: { type: 'boolean', default: true },
        opt: { type: 'string' },
      },
      required: ['query', 'k', 'mode', 'deep'],
    };
    assert.deepEqual(argumentSkeleton(schema), { query: '', k: 1, mode: 'fast', deep: true });
    assert.deepEqual(argumentSkeleton({ type: 'object', properties: {} }), {});
  });

  it('says where the text stops being JSON', () => {
    assert.deepEqual(parseArgumentText('{"a": 1}'), { ok: true, value: { a: 1 } });
    const bad = parseArgumentText('{a: 1}');
    assert.ok(!bad.ok && /^Not valid JSON: /.test(bad.message));
    assert.ok(!parseArgumentText('  ').ok);
  });
});
