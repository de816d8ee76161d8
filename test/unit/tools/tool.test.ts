import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import {
  defineTool,
  parametersJsonSchema,
  Tool,
  ToolDefinitionError,
  ToolSet,
  type ToolContext,
} from '#trainer/foundations/tools';

const SearchArgs = z.object({
  query: z.string().describe('What to look for'),
  limit: z.int().min(1).max(20).default(5),
});

class Search extends Tool<typeof SearchArgs> {
  name = 'search';
  description = 'Search the corpus.';
  parameters = SearchArgs;
  execute({ query, limit }: z.output<typeof SearchArgs>, _ctx: ToolContext): string {
    return `${query}:${limit}`;
  }
}

describe('Tool schemas', () => {
  it('converts the zod schema with zod, for the input side, without the $schema and safe-integer noise', () => {
    assert.deepEqual(new Search().jsonSchema(), {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for' },
        limit: { default: 5, type: 'integer', minimum: 1, maximum: 20 },
      },
      required: ['query'],
    });
    const bare = parametersJsonSchema(
      't',
      z.object({
        n: z.int(),
        m: z.int().positive(),
        nested: z.object({ k: z.int() }),
        tags: z.array(z.int()).optional(),
      }),
    );
    assert.deepEqual(bare, {
      type: 'object',
      properties: {
        n: { type: 'integer' },
        m: { type: 'integer', exclusiveMinimum: 0 },
        nested: { type: 'object', properties: { k: { type: 'integer' } }, required: ['k'] },
        tags: { type: 'array', items: { type: 'integer' } },
      },
      required: ['n', 'm', 'nested'],
    });
  });

  it('gives the tool as chat templates expect it', () => {
    assert.deepEqual(new Search().spec(), {
      type: 'function',
      function: { name: 'search', description: 'Search the corpus.', parameters: new Search().jsonSchema() },
    });
  });

  it('names the tool when its schema cannot become JSON Schema', () => {
    assert.throws(
      () => parametersJsonSchema('when', z.object({ at: z.date() })),
      (error: unknown) => {
        assert.ok(error instanceof ToolDefinitionError);
        assert.match(
          error.message,
          /^tool "when": parameters cannot be written as JSON Schema for the chat template \(.*Date.*\); use JSON types/,
        );
        return true;
      },
    );
  });
});

describe('ToolSet', () => {
  const ok = defineTool({ name: 'ok', description: 'Fine.', parameters: z.object({}), execute: () => 'fine' });

  it('keeps order, finds by name, and lists specs', () => {
    const set = new ToolSet([new Search(), ok]);
    assert.deepEqual(set.names, ['search', 'ok']);
    assert.equal(set.get('ok'), ok);
    assert.equal(set.get('nope'), undefined);
    assert.deepEqual(
      set.specs().map((s) => s.function.name),
      ['search', 'ok'],
    );
  });

  it('refuses bad definitions, naming the tool, its class and the field', () => {
    const bad = (patch: Record<string, unknown>) => Object.assign(new Search(), patch);
    const cases: [unknown, RegExp][] = [
      [
        bad({ name: 'web search' }),
        /tool "web search" \(Search\): name "web search" is not valid; use 1 to 64 letters, digits, "_" or "-"/,
      ],
      [bad({ description: ' ' }), /tool "search" \(Search\): description must be a non-empty string/],
      [bad({ parameters: { query: 'string' } }), /tool "search" \(Search\): parameters must be a zod object schema/],
      [bad({ parameters: z.string() }), /parameters must be a zod object schema/],
      [bad({ timeoutMs: 0 }), /tool "search" \(Search\): timeoutMs must be a positive number, got 0/],
      [bad({ concurrency: 1.5 }), /concurrency must be a positive integer, got 1\.5/],
      [bad({ reward: 3 }), /reward must be a method when defined/],
      [
        { name: 'x', execute() {} },
        /tools\[0\] is an instance of Object, not a Tool; tools extend Tool \(or come from defineTool\) imported from 'rollout-studio'/,
      ],
    ];
    for (const [tool, message] of cases) assert.throws(() => new ToolSet([tool as Tool]), message);
    assert.throws(
      () => new ToolSet([new Search(), Object.assign(ok, { name: 'search' })]),
      /two tools are named "search" \(Search and DefinedTool\)/,
    );
  });

  it('accepts infinite concurrency and a defineTool with typed arguments', () => {
    const t = defineTool({
      name: 'add',
      description: 'Adds.',
      parameters: z.object({ a: z.number(), b: z.number() }),
      concurrency: Infinity,
      execute: ({ a, b }) => String(a + b),
      reward: (call) => (call.arguments.a > 0 ? 1 : 0),
    });
    assert.doesNotThrow(() => new ToolSet([t]));
    assert.equal(t.concurrency, Infinity);
    assert.equal(typeof t.reward, 'function');
  });
});
