/**
 * The readers rewritten to take linear time read exactly what they read before: on random text
 * made of their delimiters (where the cases are), each agrees with the expression or loop it
 * replaced, kept here as the specification. And no reader of untrusted text throws on any input
 * except with its own error.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { splitVerlResponse } from '#trainer/bridges/verl/response';
import { answerTag } from '#trainer/pipeline/rewards/answer';
import { normalizeAnswer } from '#trainer/pipeline/rewards/answerText';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { contentStart } from '#trainer/pipeline/rollout/formats/toolCallFormat';
import { decodeBase64 } from '#trainer/pipeline/rollout/images';
import type { Trajectory } from '#trainer/pipeline/rollout/trajectory';
import { PARSERS } from '../../helpers/parsers';

const RUNS = { numRuns: 3000, seed: 53 };

/** Text made of `pieces`, up to `maxPieces` of them: the delimiters a reader cares about, and filler. */
const textOf = (pieces: string[], maxPieces = 24) =>
  fc.array(fc.constantFrom(...pieces), { maxLength: maxPieces, size: 'max' }).map((parts) => parts.join(''));

describe('the verl response splitter', () => {
  // The expression the splitter replaced: exponential on repeated result blocks, so only short texts.
  const TOOL_BLOCK = /\n?user\n((?:<tool_response>\n[\s\S]*?\n<\/tool_response>\n?)+)assistant\n/g;
  const TOOL_RESPONSE = /<tool_response>\n([\s\S]*?)\n<\/tool_response>/g;
  const EMPTY_TURN = /^(?:<think>\s*<\/think>)?\s*$/;
  function before(text: string) {
    const messages: { role: string; content: string }[] = [];
    let at = 0;
    for (const block of text.matchAll(TOOL_BLOCK)) {
      messages.push({ role: 'assistant', content: text.slice(at, block.index) });
      for (const response of block[1].matchAll(TOOL_RESPONSE)) messages.push({ role: 'tool', content: response[1] });
      at = block.index + block[0].length;
    }
    const tail = text.slice(at);
    if (!EMPTY_TURN.test(tail) || messages.length === 0) messages.push({ role: 'assistant', content: tail });
    return messages;
  }
  const pieces = [
    'user\n',
    'user',
    '<tool_response>\n',
    '<tool_response>',
    '\n</tool_response>',
    '</tool_response>',
    '\n',
    'assistant\n',
    'assistant',
    'x',
    '<think>',
    '</think>',
    ' ',
  ];

  it('splits random template text exactly as the regular expression did', () => {
    fc.assert(
      fc.property(textOf(pieces), (text) => assert.deepEqual(splitVerlResponse(text), before(text))),
      RUNS,
    );
  });

  it('splits well-formed turns and results back into what was joined', () => {
    const turn = fc.string({ maxLength: 12 }).filter((t) => !t.includes('user\n') && !t.includes('assistant\n'));
    const result = fc.string({ maxLength: 12 }).filter((t) => !t.includes('</tool_response>'));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(turn, fc.array(result, { minLength: 1, maxLength: 3 })), { maxLength: 4 }),
        turn,
        (rounds, last) => {
          const text =
            rounds
              .map(
                ([t, rs]) =>
                  `${t}user\n${rs.map((r) => `<tool_response>\n${r}\n</tool_response>`).join('\n')}\nassistant\n`,
              )
              .join('') + `${last}`;
          assert.deepEqual(splitVerlResponse(text), before(text));
        },
      ),
      RUNS,
    );
  });
});

describe('the Hermes tool-call parser', () => {
  const OPEN = '<tool_call>';
  const CLOSE = '</tool_call>';
  // The loop it replaced (quadratic: it looked the closer up again for every opener), as call ranges.
  function before(text: string): [number, number][] {
    const calls: [number, number][] = [];
    let at = text.indexOf(OPEN, contentStart(text));
    while (at >= 0) {
      const bodyStart = at + OPEN.length;
      const close = text.indexOf(CLOSE, bodyStart);
      const nextOpen = text.indexOf(OPEN, bodyStart);
      if (close < 0 || (nextOpen >= 0 && nextOpen < close)) {
        calls.push([at, nextOpen >= 0 ? nextOpen : text.length]);
        at = nextOpen;
        continue;
      }
      calls.push([at, close + CLOSE.length]);
      at = text.indexOf(OPEN, close + CLOSE.length);
    }
    return calls;
  }
  const pieces = [
    OPEN,
    CLOSE,
    '{"name": "a", "arguments": {}}',
    '{',
    '"',
    '<think>',
    '</think>',
    'x',
    '\n',
    '<tool_call',
  ];

  it('finds the calls the former loop found, in order and without overlap', () => {
    const format = new HermesFormat();
    fc.assert(
      fc.property(textOf(pieces), (text) => {
        const calls = format.parse(text);
        assert.deepEqual(
          calls.map((c) => [c.start, c.end]),
          before(text),
        );
        for (const call of calls) assert.ok(call.parseError !== undefined || call.name !== undefined);
      }),
      RUNS,
    );
  });
});

describe('the answer tag', () => {
  function before(text: string): string | undefined {
    const body = text.slice(contentStart(text));
    let found: string | undefined;
    for (const match of body.matchAll(/<answer>([\s\S]*?)<\/answer>/g)) found = match[1];
    return found?.trim();
  }
  const turn = (content: string) => ({ turns: [{ role: 'assistant', content }] }) as unknown as Trajectory<object>;

  it('reads the last answer as the lazy expression did', () => {
    const pieces = ['<answer>', '</answer>', '<answer', 'x', ' ', '<think>', '</think>'];
    fc.assert(
      fc.property(textOf(pieces), (text) => assert.equal(answerTag(turn(text)), before(text))),
      RUNS,
    );
  });
});

describe('base64 and answer normalisation', () => {
  it('accepts the base64 the former expression accepted', () => {
    const before = (body: string) => /^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(body);
    fc.assert(
      fc.property(textOf(['A', 'z', '+', '/', '=', ' ', '\n', '!', '-'], 16), (text) => {
        let accepted = true;
        try {
          decodeBase64(text, 'image');
        } catch {
          accepted = false;
        }
        assert.equal(accepted, before(text));
      }),
      RUNS,
    );
  });

  it('normalises answers as the former character loop did', () => {
    const punctuation = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');
    const before = (text: string) => {
      let kept = '';
      for (const ch of text.toLowerCase()) if (!punctuation.has(ch)) kept += ch;
      return kept
        .replace(/\b(a|an|the)\b/g, ' ')
        .split(/\s+/)
        .filter(Boolean)
        .join(' ');
    };
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) =>
        assert.equal(normalizeAnswer(text), before(text)),
      ),
      RUNS,
    );
  });
});

describe('every reader of untrusted text', () => {
  const delimiters = [
    '<tool_call>',
    '</tool_call>',
    '<tool_response>\n',
    '\n</tool_response>',
    'user\n',
    'assistant\n',
    '<think>',
    '</think>',
    '<answer>',
    '</answer>',
    '\n```js\n',
    '```',
    '{',
    '}',
    '[',
    '"',
    '\\',
    ' ',
    '\n',
    '=',
    'Error: ',
    ':80',
  ];
  const anyText = fc.oneof(fc.string({ unit: 'binary', maxLength: 200 }), textOf(delimiters, 40));

  for (const [name, read] of Object.entries(PARSERS)) {
    it(`${name}: reads any text without throwing`, () => {
      fc.assert(
        fc.property(anyText, (text) => {
          read(text);
        }),
        { numRuns: 500, seed: 53 },
      );
    });
  }
});
