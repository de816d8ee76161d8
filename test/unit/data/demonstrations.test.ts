/**
 * The demonstration format (protocol/demonstration.ts) and its loader: every problem is named by
 * file, line and field, and calls are checked against the config's tools.
 */
import { after, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { loadDemonstrations } from '#trainer/foundations/data';
import { Demonstration } from '#trainer/contract/protocol';
import { defineTool, ToolSet } from '#trainer/foundations/tools';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'demonstrations-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const tools = new ToolSet([
  defineTool({
    name: 'calculator',
    description: 'Computes.',
    parameters: z.object({ expression: z.string() }),
    execute: () => '4',
  }),
]);
const ask = [
  { role: 'system', content: 'Use the calculator.' },
  { role: 'user', content: 'What is 2 + 2?' },
];
const call = (name = 'calculator', args: unknown = { expression: '2 + 2' }) => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ type: 'function', function: { name, arguments: args } }],
});
const result = (content = '4', name?: string) => ({ role: 'tool', content, ...(name ? { name } : {}) });
const answer = { role: 'assistant', content: '<answer>4</answer>' };

function write(name: string, lines: unknown[]): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return file;
}

describe('the demonstration format', () => {
  it('accepts a prompt, calls each followed by their results, and the answer; extra fields are kept', () => {
    const parsed = Demonstration.parse({
      id: 7,
      kind: 'correct',
      messages: [...ask, call(), result('4', 'calculator'), { ...answer }],
    });
    assert.equal(parsed.messages.length, 5);
    assert.equal((parsed as Record<string, unknown>)['kind'], 'correct');
    assert.ok(Demonstration.safeParse({ messages: [ask[1], answer] }).success, 'an answer without calls');
    assert.ok(
      Demonstration.safeParse({
        messages: [
          ask[1],
          { ...call(), tool_calls: [...call().tool_calls, ...call().tool_calls] },
          result(),
          result(),
          answer,
        ],
      }).success,
      'two calls in one turn',
    );
  });

  it('names the message that breaks the layout, and what was expected', () => {
    const problem = (messages: unknown[]) => {
      const parsed = Demonstration.safeParse({ messages });
      assert.ok(!parsed.success, JSON.stringify(messages));
      return parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    };
    assert.equal(
      problem([...ask]),
      'messages: expected the prompt followed by assistant turns; there is no assistant message',
    );
    assert.equal(
      problem([ask[0], answer]),
      'messages.1: the first assistant message must follow a user message (the prompt ends with the question)',
    );
    assert.equal(
      problem([...ask, call(), answer]),
      'messages.3.role: expected a "tool" message with the result of messages.2.tool_calls.0 (calculator), got "assistant"',
    );
    assert.equal(
      problem([...ask, call(), result('4', 'search'), answer]),
      'messages.3.name: the result of messages.2.tool_calls.0 is named "search"; the call was to "calculator"',
    );
    assert.equal(
      problem([...ask, call(), result()]),
      'messages.3: the demonstration must end with the assistant answering (a message without tool_calls)',
    );
    assert.equal(
      problem([...ask, answer, ask[1]]),
      'messages.3: nothing may follow an assistant message without tool_calls: it is the answer, and ends the demonstration',
    );
    assert.equal(
      problem([...ask, call(), result(), result(), answer]),
      'messages.4.role: expected an assistant message, got "tool"',
    );
    assert.match(problem([...ask, { role: 'narrator', content: 'x' }, answer]), /^messages\.2\.role: /);
  });
});

describe('loadDemonstrations', () => {
  it('reads a JSONL file, skipping blank lines, with the source of each demonstration', async () => {
    const file = write('ok.jsonl', [
      { id: 'q-1', messages: [...ask, call(), result(), answer] },
      '',
      { messages: [ask[1], answer] },
    ]);
    const loaded = await loadDemonstrations(file, { tools });
    assert.deepEqual(
      loaded.map((d) => [d.id, d.source.line, d.messages.length]),
      [
        ['q-1', 1, 5],
        [undefined, 3, 2],
      ],
    );
  });

  it('names the file, line and field of a demonstration that is wrong', async () => {
    const at = (name: string) => path.join(dir, name);
    await assert.rejects(loadDemonstrations(write('json.jsonl', [{ messages: [ask[1], answer] }, '{"messages": ['])), {
      message: new RegExp(`^${at('json.jsonl')}:2: not valid JSON`),
    });
    await assert.rejects(loadDemonstrations(write('layout.jsonl', [{ messages: [...ask, call(), answer] }])), {
      message: `${at('layout.jsonl')}:1: messages.3.role: expected a "tool" message with the result of messages.2.tool_calls.0 (calculator), got "assistant"`,
    });
    await assert.rejects(
      loadDemonstrations(write('content.jsonl', [{ messages: [ask[1], { role: 'assistant', content: 4 }] }])),
      { message: new RegExp(`^${at('content.jsonl')}:1: messages\\.1\\.content: `) },
    );
    await assert.rejects(
      loadDemonstrations(write('name.jsonl', [{ messages: [...ask, call('calc'), result(), answer] }]), { tools }),
      {
        message: `${at('name.jsonl')}:1: messages.2.tool_calls.0.function.name: "calc" is not one of the tools (calculator)`,
      },
    );
    await assert.rejects(
      loadDemonstrations(
        write('args.jsonl', [{ messages: [...ask, call('calculator', { expression: 4 }), result(), answer] }]),
        { tools },
      ),
      {
        message: `${at('args.jsonl')}:1: messages.2.tool_calls.0.function.arguments.expression: Invalid input: expected string, received number`,
      },
    );
    await assert.rejects(
      loadDemonstrations(
        write('string-args.jsonl', [{ messages: [...ask, call('calculator', '{"expression": '), result(), answer] }]),
        { tools },
      ),
      {
        message: new RegExp(
          `^${at('string-args.jsonl')}:1: messages\\.2\\.tool_calls\\.0\\.function\\.arguments: a string of arguments must be JSON`,
        ),
      },
    );
    assert.equal(
      (
        await loadDemonstrations(
          write('json-string.jsonl', [
            { messages: [...ask, call('calculator', '{"expression": "2 + 2"}'), result(), answer] },
          ]),
          { tools },
        )
      ).length,
      1,
      'arguments as a JSON string, as a model writes them',
    );
    await assert.rejects(loadDemonstrations(write('empty.jsonl', [''])), {
      message: `${at('empty.jsonl')}: the file has no demonstrations`,
    });
    await assert.rejects(loadDemonstrations(at('missing.jsonl')), {
      message: `${at('missing.jsonl')}: demonstrations file not found`,
    });
  });
});
