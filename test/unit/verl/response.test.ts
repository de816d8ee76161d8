/**
 * Reading back what verl gives us as text: its decoded responses split into turns, and our error
 * observations read back as the error kinds they report.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { splitVerlResponse } from '#trainer/bridges/verl/response';
import { defaultErrorObservation } from '#trainer/pipeline/rollout/errorObservation';
import { readErrorObservation } from '#trainer/pipeline/rollout/readErrorObservation';
import type { ToolErrorKind } from '#trainer/contract/protocol/runStore';

describe('verl responses as messages', () => {
  it('splits turns at the tool-response blocks the Qwen template leaves once special tokens are skipped', () => {
    const text =
      'Let me look.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>' +
      'user\n<tool_response>\nfirst\nresult\n</tool_response>\n<tool_response>\nsecond\n</tool_response>\nassistant\n' +
      '<think>\n\n</think>\n\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>' +
      '\nuser\n<tool_response>\nthird\n</tool_response>\nassistant\n<answer>x</answer>';
    assert.deepEqual(splitVerlResponse(text), [
      {
        role: 'assistant',
        content:
          'Let me look.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>',
      },
      { role: 'tool', content: 'first\nresult' },
      { role: 'tool', content: 'second' },
      {
        role: 'assistant',
        content: '<think>\n\n</think>\n\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>',
      },
      { role: 'tool', content: 'third' },
      { role: 'assistant', content: '<answer>x</answer>' },
    ]);
  });

  it('keeps a response without tools as one turn, and ends without an empty turn after the last results', () => {
    assert.deepEqual(splitVerlResponse('<answer>y</answer>'), [{ role: 'assistant', content: '<answer>y</answer>' }]);
    assert.deepEqual(splitVerlResponse(''), [{ role: 'assistant', content: '' }]);
    assert.deepEqual(
      splitVerlResponse(
        'c<tool_call>x</tool_call>user\n<tool_response>\nr\n</tool_response>\nassistant\n<think>\n\n</think>\n\n',
      ),
      [
        { role: 'assistant', content: 'c<tool_call>x</tool_call>' },
        { role: 'tool', content: 'r' },
      ],
    );
  });
});

describe('error observations read back', () => {
  it('reads every kind our loop writes back as that kind', () => {
    const cases: [ToolErrorKind, string, string | undefined][] = [
      ['parse', 'the tool call is not valid JSON (x)', undefined],
      ['unknown_tool', 'there is no tool named "x"; the tools are: a', 'x'],
      ['invalid_arguments', 'arguments of search do not match its schema: query: required', 'search'],
      ['threw', 'Error: kaput\n    at x.ts:1', 'search'],
      ['timeout', 'search did not finish within 1500 ms', 'search'],
    ];
    for (const [kind, message, tool] of cases) {
      const text = defaultErrorObservation({ kind, message, ...(tool ? { tool } : {}) });
      assert.equal(readErrorObservation(text)?.kind, kind, text);
    }
    assert.equal(readErrorObservation("Error when executing tool: 'nope'")?.kind, 'threw');
    assert.equal(readErrorObservation('Paris is the capital of France.'), undefined);
    assert.equal(readErrorObservation('Error: is a word a document may start with'), undefined);
  });
});
