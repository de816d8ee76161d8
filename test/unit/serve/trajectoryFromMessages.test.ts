/**
 * Trajectories rebuilt from messages (the reward endpoint's input): calls from `tool_calls` or
 * from the text, answered in order by the tool messages, errors read back from observations,
 * arguments parsed by the tool's schema, a served call's data found again, a cut last turn.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { datasetFromRows } from '#trainer/foundations/data/dataset';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { trajectoryFromMessages } from '#trainer/bridges/serve/trajectoryFromMessages';
import { defineTool } from '#trainer/foundations/tools/tool';
import { ToolSet } from '#trainer/foundations/tools/toolSet';

const tools = new ToolSet([
  defineTool({
    name: 'lookup',
    description: 'Look up.',
    parameters: z.object({ word: z.string(), limit: z.number().default(3) }),
    execute: () => 'x',
  }),
]);
const [row] = datasetFromRows('rows', [{ id: 'r1', system: 'Be brief.', prompt: 'What is x?' }]).rows;
const format = new HermesFormat();
const call = (args: string) => `<tool_call>\n{"name": "lookup", "arguments": ${args}}\n</tool_call>`;

describe('trajectories from messages', () => {
  it('reads calls from the text and from tool_calls, answered in order, errors read back, data found again', () => {
    const t = trajectoryFromMessages(
      row,
      [
        { role: 'assistant', content: `${call('{"word": "a"}')}\n${call('{"word": 1}')}` },
        { role: 'tool', content: 'about a' },
        { role: 'tool', content: 'Error: arguments of lookup do not match its schema: word: expected string' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ type: 'function', function: { name: 'lookup', arguments: '{"word": "b"}' } }],
        },
        { role: 'tool', content: 'about b' },
        { role: 'assistant', content: '<answer>b</answer>' },
      ],
      {
        format,
        tools,
        index: 3,
        dataFor: (name, args) => (name === 'lookup' && (args as { word: string }).word === 'a' ? { id: 7 } : undefined),
      },
    );
    assert.deepEqual(
      t.turns.map((x) => x.role),
      ['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'assistant'],
    );
    assert.deepEqual(
      t.calls.map((c) => [c.turn, c.index, c.arguments, c.error?.kind ?? null, c.observation]),
      [
        [0, 0, { word: 'a', limit: 3 }, null, 'about a'],
        [
          0,
          1,
          { word: 1 },
          'invalid_arguments',
          'Error: arguments of lookup do not match its schema: word: expected string',
        ],
        [1, 0, { word: 'b', limit: 3 }, null, 'about b'],
      ],
    );
    assert.deepEqual(t.calls[0].result, { content: [{ type: 'text', text: 'about a' }], data: { id: 7 } });
    assert.equal(t.calls[2].result?.data, undefined);
    assert.equal(t.finishReason, 'answered');
    assert.equal(t.prompt, 'What is x?');
    assert.equal(t.index, 3);
  });

  it('a last turn cut mid-call has no calls and ends the trajectory on the budget', () => {
    const t = trajectoryFromMessages(
      row,
      [{ role: 'assistant', content: `${call('{"word": "a"}')}\n<tool_call>\n{"name": "look` }],
      { format, tools },
    );
    assert.deepEqual(t.calls, []);
    assert.equal(t.turns[2].finish, 'length');
    assert.equal(t.finishReason, 'max_total_tokens');
  });

  it('a call that cannot be read before the last turn is a parse error, as in our loop', () => {
    const t = trajectoryFromMessages(
      row,
      [
        { role: 'assistant', content: '<tool_call>\n{"name": }\n</tool_call>' },
        { role: 'tool', content: 'Error: the tool call could not be read: the tool call is not valid JSON' },
        { role: 'assistant', content: `${call('{"word": "a"}')}` },
      ],
      { format, tools },
    );
    assert.deepEqual(
      t.calls.map((c) => [c.turn, c.error?.kind ?? null]),
      [
        [0, 'parse'],
        [1, null],
      ],
    );
    assert.equal(t.finishReason, 'max_turns', 'ended on an unanswered call');
  });

  it('takes a turn of 200,000 calls (a request can hold that many; spreading them as arguments overflowed the stack)', () => {
    const t = trajectoryFromMessages(
      row,
      [
        { role: 'assistant', content: '<tool_call>{</tool_call>'.repeat(200_000) },
        { role: 'tool', content: 'r' },
      ],
      { format, tools },
    );
    assert.equal(t.calls.length, 200_000);
    assert.equal(t.calls[0].error?.kind, 'parse');
  });
});
