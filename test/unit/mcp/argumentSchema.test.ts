/**
 * An MCP tool's JSON Schema, checked by Ajv inside a zod schema: what the schema accepts passes
 * through unchanged; what it refuses fails with one issue per problem, each naming the field.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { argumentsFromJsonSchema } from '#trainer/foundations/mcp/argumentSchema';
import { isZodObjectSchema } from '#trainer/foundations/tools/schema';
import { ToolDefinitionError } from '#trainer/foundations/tools/toolErrors';

const schema = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 10 },
    mode: { enum: ['fast', 'exact'] },
    filters: {
      type: 'array',
      items: { type: 'object', properties: { field: { type: 'string' } }, required: ['field'] },
    },
    since: { type: 'string', format: 'date' },
  },
  required: ['query'],
  additionalProperties: false,
};

describe('MCP argument schemas', () => {
  const parameters = argumentsFromJsonSchema('search', schema);

  it('is a zod object schema, so the runner and the editor validate through it', () => {
    assert.ok(isZodObjectSchema(parameters));
  });

  it('passes valid arguments through unchanged', () => {
    const args = { query: 'x', limit: 3, mode: 'fast', filters: [{ field: 'a' }], since: '2026-01-31' };
    assert.deepEqual(parameters.parse(args), args);
  });

  it('names every bad field, nested ones by their path', () => {
    const result = parameters.safeParse({ limit: 0, mode: 'slow', filters: [{}], since: 'yesterday', extra: 1 });
    assert.equal(result.success, false);
    const issues = result.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).sort();
    assert.deepEqual(issues, [
      'extra: is not allowed here',
      'filters.0.field: required',
      'limit: must be >= 1',
      'mode: must be one of ["fast","exact"]',
      'query: required',
      'since: must match format "date"',
    ]);
  });

  it('reads the 2020-12 dialect when the schema says so (zod and the SDK write it)', () => {
    const p = argumentsFromJsonSchema('t', {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { a: { type: 'array', prefixItems: [{ type: 'number' }] } },
    });
    assert.equal(p.safeParse({ a: [1] }).success, true);
    assert.equal(p.safeParse({ a: ['x'] }).success, false);
  });

  it('a schema that does not compile is a definition error naming the tool', () => {
    assert.throws(
      () => argumentsFromJsonSchema('broken', { type: 'object', properties: { a: { type: 'no-such-type' } } }),
      (e: Error) =>
        e instanceof ToolDefinitionError && /tool "broken": its input schema is not valid JSON Schema/.test(e.message),
    );
  });
});
