/**
 * No input freezes a server or the trainer: every reader of untrusted text (test/helpers/parsers.ts)
 * reads 4 MB built to make a backtracking or rescanning reader slow — openers without closers,
 * nested braces, runs of whitespace and quotes, repeated blocks of delimiters — in under a second,
 * and the 1,248 bytes that held serve-tools for 18 s in under 100 ms. Each runs in a worker that is
 * stopped after 20 s, so a reader gone super-linear fails here rather than hanging the run.
 *
 * Bounds, not benchmarks: the linear readers take a fraction of them on this 2-core machine, the
 * quadratic and exponential ones minutes to hours. Two inputs cost more per byte without being
 * super-linear — a turn of 175,000 unreadable calls (each a JSON.parse error, about 15 µs) and an
 * answer of 1.4 million articles to normalise — so for them the check is how the time grows: 4 MB
 * may take about four times 1 MB (linear), not sixteen (quadratic).
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { PARSERS } from '../../helpers/parsers';
import { parseTimes } from '../../helpers/parseDeadline';

const MB4 = 4 * 1024 * 1024;

/** `unit` repeated up to `length` characters, after `prefix` and before `suffix`. */
function run(unit: string, options: { prefix?: string; suffix?: string; length?: number } = {}): string {
  const { prefix = '', suffix = '', length = MB4 } = options;
  const room = length - prefix.length - suffix.length;
  return prefix + unit.repeat(Math.floor(room / unit.length)) + suffix;
}

const RESULT_BLOCK = '<tool_response>\n\n</tool_response>\n';

/** The shape that blew up: `user\n`, result blocks and no `assistant\n`, 1,248 bytes in all. */
export const CRAFTED_VERL = run(RESULT_BLOCK, { prefix: 'user\n', length: 1248 }).padEnd(1248, ' ');

/** Whitespace, quotes, braces and the reader's delimiters, each in a long run. */
const COMMON = [
  run(' ', { suffix: 'x' }),
  run('\n \t', { suffix: '!' }),
  run('"'),
  run('\\"', { prefix: '"' }),
  run('{', { suffix: '}' }),
  run('{"a":', { suffix: '' }),
  run('[', { suffix: 'x' }),
];

const ADVERSARIAL: Record<keyof typeof PARSERS & string, string[]> = {
  hermes: [
    run('<tool_call>'),
    run('<tool_call>\n{"name": "a", "arguments": {'),
    run('</tool_call>'),
    run(' ', { prefix: '<tool_call>', suffix: 'x</tool_call>' }),
    run('{', { prefix: '<tool_call>', suffix: '</tool_call>' }),
    run('<think>'),
    run('</think><tool_call>'),
  ],
  'hermes history message': [
    run('<tool_call>{"name": "a", "arguments": {}}</tool_call>x'),
    run('<tool_call>{"name": "a"'),
  ],
  'code blocks': [
    run('\n```js\n'),
    run('\n```'),
    run('a', { prefix: '\n```' }),
    run('`'),
    run(' \t', { prefix: '\n```js', suffix: 'x' }),
    run('```js\n```\n'),
  ],
  'thinking split (contentStart)': [run('<think>'), run('</think>'), run('<think'), run(' ', { suffix: '<think>' })],
  'thinking split (splitReasoning)': [
    run(' ', { suffix: 'x' }),
    run(' ', { suffix: '<think' }),
    run('<think>'),
    run('</think'),
    run(' ', { prefix: '<think>' }),
  ],
  'verl response': [
    run(RESULT_BLOCK, { prefix: 'user\n' }),
    run('user\n' + RESULT_BLOCK),
    run('user\n<tool_response>\n'),
    run('\n</tool_response>\n'),
    run('\n</tool_response>'),
    run('user\n'),
    run('\n', { prefix: 'user\n<tool_response>\n' }),
    run(RESULT_BLOCK + 'assistant\nuser\n'),
  ],
  'answer tag': [run('<answer>'), run('</answer>'), run('<answer></answer'), run('<answer><think>')],
  'answer normalisation': [run('.,;'), run(' the', { suffix: 'x' })],
  'error observation': [
    run('x', { prefix: 'Error: ' }),
    run('1', { prefix: 'Error: x did not finish within ', suffix: 'x' }),
    run('a ', { prefix: 'Error: ' }),
    run(' ', { prefix: 'Error:' }),
  ],
  'base64 image': [
    run(' ', { suffix: '!' }),
    run('A \n', { suffix: '=' + ' '.repeat(1000) + '!' }),
    run('=', { prefix: 'AAAA' }),
    run(' ', { prefix: 'data:image/png;base64,', suffix: '=!' }),
  ],
  'MCP image block': [run('=', { suffix: 'x' }), run('A')],
  'Host header': [run('['), run('a', { suffix: ':1x' }), run('1', { prefix: 'a:', suffix: 'x' }), run(':')],
  'call arguments': [...COMMON],
  'chat request': [...COMMON, run('<tool_call>')],
};

/** Inputs whose every few bytes cost microseconds: their time is checked for linear growth. */
const COSTLY: [parser: string, unit: string][] = [
  ['hermes', '<tool_call></tool_call>'],
  ['hermes', '<tool_call>{</tool_call>'],
  ['answer normalisation', ' a '],
];

describe('readers of untrusted text take linear time', () => {
  it('covers every reader', () => {
    assert.deepEqual(Object.keys(ADVERSARIAL).sort(), Object.keys(PARSERS).sort());
  });

  it('reads the crafted 1,248-byte verl response in under 100 ms', async () => {
    assert.equal(CRAFTED_VERL.length, 1248);
    const [ms] = await parseTimes('verl response', [CRAFTED_VERL], 10_000);
    assert.ok(ms < 100, `${ms.toFixed(0)} ms`);
  });

  for (const [parser, inputs] of Object.entries(ADVERSARIAL)) {
    it(`${parser}: each of ${inputs.length} adversarial 4 MB inputs in under a second`, async () => {
      for (const input of inputs) assert.ok(input.length > MB4 - 64 && input.length <= MB4, `${input.length}`);
      const times = await parseTimes(parser, [...inputs, ...COMMON]);
      const slow = times.flatMap((ms, i) => (ms < 1000 ? [] : [`input ${i}: ${ms.toFixed(0)} ms`]));
      assert.deepEqual(slow, [], `${parser} took a second or more`);
    });
  }

  for (const [parser, unit] of COSTLY) {
    it(`${parser}: ${JSON.stringify(unit)} repeated, 4 MB in about 4 times 1 MB`, async () => {
      const [, oneMb, fourMb] = await parseTimes(parser, [
        run(unit, { length: MB4 / 4 }), // warms the reader up at full size
        run(unit, { length: MB4 / 4 }),
        run(unit),
      ]);
      assert.ok(fourMb < 8 * oneMb, `1 MB: ${oneMb.toFixed(0)} ms, 4 MB: ${fourMb.toFixed(0)} ms`);
      assert.ok(fourMb < 10_000, `4 MB: ${fourMb.toFixed(0)} ms`);
    });
  }
});
