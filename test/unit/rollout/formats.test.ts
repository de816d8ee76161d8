import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { CodeBlockFormat, HermesFormat } from '#trainer/pipeline/rollout';

describe('HermesFormat', () => {
  const hermes = new HermesFormat();

  it('finds every call after the thinking, with its exact span', () => {
    const text =
      '<think>\nMaybe <tool_call>{"name": "draft", "arguments": {}}</tool_call> first?\n</think>\n\n' +
      'Searching.\n<tool_call>\n{"name": "search", "arguments": {"query": "Ada"}}\n</tool_call>\n' +
      '<tool_call>\n{"name": "calculator", "arguments": "{\\"expression\\": \\"1+1\\"}"}\n</tool_call>';
    const calls = hermes.parse(text);
    assert.deepEqual(
      calls.map((c) => [c.name, c.arguments, c.raw, c.parseError]),
      [
        ['search', { query: 'Ada' }, '{"name": "search", "arguments": {"query": "Ada"}}', undefined],
        [
          'calculator',
          { expression: '1+1' },
          '{"name": "calculator", "arguments": "{\\"expression\\": \\"1+1\\"}"}',
          undefined,
        ],
      ],
    );
    for (const call of calls) {
      assert.ok(text.slice(call.start).startsWith('<tool_call>'));
      assert.ok(text.slice(0, call.end).endsWith('</tool_call>'));
    }
  });

  it("says where a call stops being JSON, in the policy's own text", () => {
    const garbled = hermes.parse(
      '<tool_call>\n{"name": "convert", "arguments": {"value": 23.8, "fm", "to": "km"}}\n</tool_call>',
    );
    assert.equal(garbled[0].parseError, 'not valid JSON at ", \\"to\\": \\"km\\""…');
    assert.equal(hermes.parse('<tool_call>{"name" "x"}</tool_call>')[0].parseError, 'not valid JSON at "\\"x\\"}"');
  });

  it('reports unreadable calls as parse failures and keeps going', () => {
    const text = [
      '<tool_call>\n{"name": "a", "arguments": {"x": 1}\n</tool_call>',
      '<tool_call>\n["search"]\n</tool_call>',
      '<tool_call>\n{"arguments": {}}\n</tool_call>',
      '<tool_call>\n{"name": "ok", "arguments": [1]}\n</tool_call>',
      '<tool_call>\n{"name": "nested", "arguments": {}}',
      '<tool_call>\n{"name": "last"}',
    ].join('\n');
    const calls = hermes.parse(text);
    assert.deepEqual(
      calls.map((c) => [c.name, c.arguments, c.parseError]),
      [
        [undefined, undefined, 'not valid JSON (it ends early)'],
        [undefined, undefined, 'not a JSON object {"name": …, "arguments": {…}}'],
        [undefined, undefined, 'no "name" string'],
        // The schema judges arguments of the wrong type: the name is known, so the error can say which tool.
        ['ok', [1], undefined],
        [undefined, undefined, 'not closed with </tool_call>'],
        [undefined, undefined, 'not closed with </tool_call>'],
      ],
    );
    assert.equal(calls[4].raw, '{"name": "nested", "arguments": {}}');
    assert.equal(calls[5].end, text.length);
  });

  it('finds nothing in a turn that only thinks, or that opened its thinking and never closed it', () => {
    assert.deepEqual(hermes.parse('<think>\n<tool_call>\n{"name": "x", "arguments": {}}\n</tool_call>'), []);
    assert.deepEqual(hermes.parse('The answer is 4.'), []);
  });

  it('gives the turn back as a message with tool_calls, the text between calls as content', () => {
    const text =
      '<think>\nplan\n</think>\n\nLet me look.\n<tool_call>\n{"name": "search", "arguments": {"query": "Ada"}}\n</tool_call>\n<tool_call>\nnot json\n</tool_call>';
    assert.deepEqual(hermes.assistantMessage(text, hermes.parse(text)), {
      role: 'assistant',
      content: '<think>\nplan\n</think>\n\nLet me look.\n\n<tool_call>\nnot json\n</tool_call>',
      tool_calls: [{ type: 'function', function: { name: 'search', arguments: { query: 'Ada' } } }],
    });
    assert.deepEqual(hermes.assistantMessage('Done.', []), { role: 'assistant', content: 'Done.' });
  });
});

describe('CodeBlockFormat', () => {
  const code = new CodeBlockFormat();

  it('turns each runnable fenced block into a call of the code tool; other fences are text', () => {
    const text = 'Plan:\n```text\nnot code\n```\n```javascript\nprint(1)\n```\nand\n```js\nlet a = 2;\na * 3\n```';
    const calls = code.parse(text);
    assert.deepEqual(
      calls.map((c) => [c.name, c.arguments, c.raw]),
      [
        ['run_javascript', { code: 'print(1)' }, 'print(1)'],
        ['run_javascript', { code: 'let a = 2;\na * 3' }, 'let a = 2;\na * 3'],
      ],
    );
    assert.ok(text.slice(calls[0].start).startsWith('```javascript'));
    assert.equal(calls[1].end, text.length);
  });

  it('reports an unclosed block, and uses the configured tool and argument names', () => {
    const custom = new CodeBlockFormat({ toolName: 'python', argument: 'source', languages: ['python', 'py'] });
    const calls = custom.parse('```python\nprint(2)\n```\n```py\nx = 1');
    assert.deepEqual(
      calls.map((c) => [c.name, c.arguments, c.parseError]),
      [
        ['python', { source: 'print(2)' }, undefined],
        [undefined, undefined, 'the code block is not closed with ```'],
      ],
    );
    assert.deepEqual(code.parse('<think>\n```js\n1\n```\n</think>\n\nno code here'), []);
    assert.deepEqual(code.assistantMessage('```js\n1\n```'), { role: 'assistant', content: '```js\n1\n```' });
  });
});
