/**
 * The tool-call grammar (trainer/pipeline/rollout/constraints/): which call texts it accepts byte by byte,
 * that its token masks equal a token-by-token check of the whole vocabulary, and that the calls
 * chat templates write for demonstrations are accepted token for token.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { z } from 'zod';
import { ChatTemplate } from '#trainer/foundations/models/text/chatTemplate';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import {
  advance,
  callObjectDone,
  callStart,
  DONE,
  type CallGrammar,
} from '#trainer/pipeline/rollout/constraints/callFrame';
import { ToolCallConstraint } from '#trainer/pipeline/rollout/constraints/callConstraint';
import type { GrammarState } from '#trainer/pipeline/rollout/constraints/jsonFrames';
import { ShapeBuilder } from '#trainer/pipeline/rollout/constraints/schemaShape';
import { TokenIndex } from '#trainer/pipeline/rollout/constraints/tokenIndex';
import { parametersJsonSchema } from '#trainer/foundations/tools/schema';

const BASE = path.resolve(__dirname, '../../../trainer/bases/weights/base');
const CURRENCIES = ['USD', 'EUR', 'GBP'] as const;
const TOOLS = {
  exchange: z.object({ amount: z.number(), from: z.enum(CURRENCIES), to: z.enum(CURRENCIES) }),
  lookup: z.object({
    id: z.int(),
    note: z.string().max(4).optional(),
    tags: z
      .array(z.enum(['a', 'bb']))
      .max(2)
      .optional(),
    maybe: z.string().nullable().optional(),
    nested: z.object({ on: z.boolean() }).optional(),
    free: z.record(z.string(), z.unknown()).optional(),
  }),
};
const SPECS = Object.entries(TOOLS).map(([name, schema]) => ({
  type: 'function' as const,
  function: { name, description: name, parameters: parametersJsonSchema(name, schema) },
}));

function grammar(): CallGrammar {
  const shapes = new ShapeBuilder();
  const utf8 = new TextEncoder();
  return {
    names: SPECS.map((s) => utf8.encode(JSON.stringify(s.function.name))),
    argumentShapes: SPECS.map((s) => shapes.fromSchema(s.function.parameters)),
  };
}

/** The state after the whole text, or null at the first refused byte. */
function feed(text: string, state: GrammarState | null = callStart(grammar())): GrammarState | null {
  for (const b of new TextEncoder().encode(text)) {
    state = advance(state, b);
    if (state === null) return null;
  }
  return state;
}
const complete = (body: string) => callObjectDone(feed(body));
const call = (name: string, args: string) => `\n{"name": "${name}", "arguments": ${args}}\n`;

describe('the tool-call grammar', () => {
  it('accepts calls of known tools with arguments of their schemas, as templates write them', () => {
    assert.ok(complete(call('exchange', '{"amount": 12.5, "from": "USD", "to": "EUR"}')));
    assert.ok(
      complete(call('exchange', '{"to": "EUR", "amount": -0.25e+3, "from": "GBP"}')),
      'keys in any order, any JSON number',
    );
    assert.ok(complete('{"name":"lookup","arguments":{"id":7}}'), 'compact, optional keys left out');
    assert.ok(
      complete(
        call(
          'lookup',
          '{"id": 0, "note": "\\"é\\u00e9", "tags": ["bb", "a"], "maybe": null, "nested": {"on": true}, "free": {"x": [1, {"y": "z"}]}}',
        ),
      ),
    );
  });

  it('refuses what would not parse or not validate: repeated keys, unknown names and keys, missing required keys, wrong types', () => {
    const refused = {
      'a repeated key': call('exchange', '{"amount": 1, "to": "USD", "to": "USD"'),
      'an unknown tool': '\n{"name": "exchangee"',
      'an unknown key': call('exchange', '{"amount": 1, "fm"'),
      'closing before a required key': call('exchange', '{"amount": 1, "from": "USD"}'),
      'a value outside the enum': call('exchange', '{"amount": 1, "from": "CHF"'),
      'a string for a number': call('exchange', '{"amount": "1"'),
      'a leading zero': call('lookup', '{"id": 01'),
      'a fraction in an integer': call('lookup', '{"id": 1.5'),
      'a string over maxLength': call('lookup', '{"id": 1, "note": "abcde"'),
      'an array over maxItems': call('lookup', '{"id": 1, "tags": ["a", "a", "a"'),
      'two whitespace bytes between tokens': call('exchange', '{"amount":  1'),
      'a control character in a string': call('lookup', '{"id": 1, "note": "a\tb"'),
      'invalid UTF-8 (a lone continuation byte)': '\n{"name": "lookup", "arguments": {"id": 1, "maybe": "\u0080',
      'arguments before the name': '\n{"arguments": {}',
      'a trailing comma': call('exchange', '{"amount": 1, "from": "USD", "to": "USD",}'),
    };
    for (const [what, text] of Object.entries(refused)) {
      // Invalid UTF-8 cannot be written in a JS string: swap the encoded U+0080 for its continuation byte alone.
      const state = what.startsWith('invalid UTF-8') ? feedBytes(text) : feed(text);
      assert.equal(state, null, `accepted ${what}: ${JSON.stringify(text)}`);
    }
  });

  it('bounds runs that could loop: digits and whitespace', () => {
    const amount = '\n{"name": "exchange", "arguments": {"amount": ';
    assert.ok(feed(`${amount}${'9'.repeat(16)}`));
    assert.equal(feed(`${amount}${'9'.repeat(17)}`), null);
    assert.ok(feed(`${amount}1.${'5'.repeat(16)}`));
    assert.equal(feed(`${amount}1.${'5'.repeat(17)}`), null);
    assert.equal(feed('\n\n\n{'), null, 'at most two whitespace bytes before the object');
  });

  it('takes the closing marker as bytes when no single token writes it, and nothing after', () => {
    const g = { ...grammar(), closing: new TextEncoder().encode('</tool_call>') };
    const state = feed(`${call('lookup', '{"id": 3}')}</tool_call>`, callStart(g));
    assert.equal(state, DONE);
    assert.equal(advance(state, 0x20), null);
  });
});

function feedBytes(text: string): GrammarState | null {
  const bytes = [...new TextEncoder().encode(text)];
  bytes.splice(bytes.length - 2, 1); // drop 0xC2, keep 0x80
  let state: GrammarState | null = callStart(grammar());
  for (const b of bytes) if ((state = advance(state, b)) === null) return null;
  return state;
}

describe('token masks', () => {
  const tokenizer = Tokenizer.load(BASE);
  const constraint = new ToolCallConstraint(tokenizer, SPECS, { open: '<tool_call>', close: '</tool_call>' });
  const openId = tokenizer.tokenId('<tool_call>');
  const closeId = tokenizer.tokenId('</tool_call>');

  it('allow exactly the tokens whose every byte the grammar accepts (the sorted-vocabulary walk against a check of each token)', () => {
    const index = TokenIndex.of(tokenizer);
    const added = new Set(tokenizer.addedTokens.map((t) => t.id));
    const prefixes = [
      '',
      '\n{"name": "',
      '\n{"name": "lookup", "arguments": {"id": 4',
      '\n{"name": "lookup", "arguments": {"id": 4, "note": "ab',
      '\n{"name": "lookup", "arguments": {"free": {"k": [tr',
    ];
    for (const prefix of prefixes) {
      const state = feed(prefix)!;
      assert.ok(state, prefix);
      const walked = index.allowedFrom(state);
      let count = 0;
      for (let id = 0; id < tokenizer.vocabSize; id++) {
        const bytes = tokenizer.tokenBytes()[id]!;
        let s: GrammarState | null = state;
        for (const b of bytes) if (s !== null) s = advance(s, b);
        const expected = !added.has(id) && bytes.length > 0 && s !== null ? 1 : 0;
        assert.equal(
          walked[id],
          expected,
          `after ${JSON.stringify(prefix)}: token ${id} ${JSON.stringify(tokenizer.decode([id]))}`,
        );
        count += expected;
      }
      assert.ok(
        count > 0 && count < tokenizer.vocabSize / 2,
        `${count} tokens allowed after ${JSON.stringify(prefix)}`,
      );
    }
  });

  it('free outside calls; inside, no special token until the object is complete, then the closing marker', () => {
    const tracker = constraint.begin();
    assert.equal(tracker.next(), undefined);
    tracker.accept(tokenizer.encode('Let')[0]);
    assert.equal(tracker.next(), undefined);
    tracker.accept(openId);
    const ids = tokenizer.encode(call('lookup', '{"id": 3}'));
    for (const id of ids) {
      const set = tracker.next()!;
      assert.equal(set.allowed[closeId], 0);
      for (const eos of tokenizer.eosTokenIds) assert.equal(set.allowed[eos], 0);
      assert.equal(set.allowed[id], 1, JSON.stringify(tokenizer.decode([id])));
      tracker.accept(id);
    }
    assert.equal(tracker.next()!.allowed[closeId], 1);
    tracker.accept(closeId);
    assert.equal(tracker.next(), undefined, 'free again after the call');
    assert.equal(tracker.refused, 0);
  });

  it("accept, token for token, the calls the base's chat template writes for demonstrations", () => {
    const template = ChatTemplate.fromTokenizer(tokenizer);
    const calls = [
      { name: 'exchange', arguments: { amount: 1234.56, from: 'USD', to: 'GBP' } },
      {
        name: 'lookup',
        arguments: { id: 42, note: 'ok', tags: ['bb'], maybe: null, nested: { on: false }, free: { a: [1, 'x'] } },
      },
    ];
    const text = template.render(
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', tool_calls: calls.map((c) => ({ type: 'function' as const, function: c })) },
      ],
      { tools: SPECS, addGenerationPrompt: false },
    );
    const ids = tokenizer.encode(text.slice(text.lastIndexOf('<|im_start|>assistant')));
    const tracker = constraint.begin();
    let constrained = 0;
    for (const id of ids) {
      const set = tracker.next();
      if (set) {
        constrained++;
        assert.equal(set.allowed[id], 1, `the template's token ${JSON.stringify(tokenizer.decode([id]))} is refused`);
      }
      tracker.accept(id);
    }
    assert.equal(tracker.refused, 0);
    assert.ok(constrained > 20, `${constrained} tokens constrained`);
  });
});
