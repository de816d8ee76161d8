/**
 * Whether an agent's next request continues what the policy has seen (historyMatch.ts): SDKs
 * re-send our answers their own way — arguments re-serialised, null content, other call ids,
 * the thinking dropped — and that is still a continuation; an edited, dropped or re-ordered
 * history is not, and the reason names the message.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { ChatMessage, ToolSpec } from '#trainer/contract/protocol/chatMessages';
import { matchHistory } from '#trainer/pipeline/rollout/gateway/historyMatch';
import { readChatRequest } from '#trainer/pipeline/rollout/gateway/chatRequest';

const tools: ToolSpec[] = [
  {
    type: 'function',
    function: { name: 'exchange', parameters: { type: 'object', properties: { amount: { type: 'number' } } } },
  },
];
const held: ChatMessage[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'How much is 12 USD in EUR?' },
  {
    role: 'assistant',
    content: '<think>\nconvert\n</think>\n\n',
    tool_calls: [
      { id: 'call_ours_0_0', type: 'function', function: { name: 'exchange', arguments: { amount: 12, to: 'EUR' } } },
    ],
  },
];

/** The messages as an SDK sends them, read the way the endpoint reads a request. */
function sent(messages: unknown[]): ChatMessage[] {
  return readChatRequest({ model: 'm', messages }).messages;
}

const resent = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'How much is 12 USD in EUR?' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: 'call_theirs',
        type: 'function',
        function: { name: 'exchange', arguments: '{"to": "EUR",  "amount": 12}' },
      },
    ],
  },
];

describe('matchHistory', () => {
  it('an SDK re-sending our answer its own way, plus a tool result, continues the sequence', () => {
    const match = matchHistory(
      held,
      tools,
      sent([...resent, { role: 'tool', tool_call_id: 'call_theirs', content: '11.06' }]),
      tools,
    );
    assert.equal(match.kind, 'extend');
    assert.deepEqual(match.kind === 'extend' && match.newMessages, [
      { role: 'tool', content: '11.06', tool_call_id: 'call_theirs', name: 'exchange' },
    ]);
  });

  it('an edited answer, other arguments, a dropped turn, other tools or nothing new: a new sequence, with why', () => {
    const cases: [unknown[], ToolSpec[], string][] = [
      [
        [
          ...resent.slice(0, 2),
          { ...resent[2], content: 'I will convert.' },
          { role: 'tool', tool_call_id: 'c', content: '1' },
        ],
        tools,
        'message 2 (assistant) differs: the assistant text was edited',
      ],
      [
        [
          ...resent.slice(0, 2),
          {
            ...resent[2],
            tool_calls: [
              { id: 'c', type: 'function', function: { name: 'exchange', arguments: '{"amount": 13, "to": "EUR"}' } },
            ],
          },
          { role: 'user', content: 'x' },
        ],
        tools,
        'message 2 (assistant) differs: tool call 0 (exchange) has other arguments',
      ],
      [
        [resent[0], { role: 'user', content: 'Summary: convert 12 USD.' }],
        tools,
        'the request has 2 messages, fewer than the 3 of the conversation so far (turns dropped or summarised)',
      ],
      [
        [...resent, { role: 'tool', tool_call_id: 'c', content: '1' }],
        [],
        'the request has other tools than the conversation so far',
      ],
      [resent, tools, 'the request adds no message to the conversation so far (it was sent again)'],
      [
        [{ role: 'user', content: 'Be brief.' }, ...resent.slice(1), { role: 'user', content: 'x' }],
        tools,
        'message 0 (system) differs: its role is user where the conversation had system',
      ],
    ];
    for (const [messages, sentTools, reason] of cases)
      assert.deepEqual(matchHistory(held, tools, sent(messages), sentTools), { kind: 'split', reason });
  });
});
