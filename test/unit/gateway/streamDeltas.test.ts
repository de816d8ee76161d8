/**
 * A streamed answer's deltas (streamDeltas.ts), token by token through the shipped base's real
 * tokenizer: they add up to the answer's content and reasoning exactly, never send a broken
 * character, the beginning of a marker, a stop string or a call as content, and the calls follow
 * whole at the end.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { builtInModelDir } from '#trainer/foundations/models/builtinModels';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { HermesFormat } from '#trainer/pipeline/rollout/formats/hermes';
import { assistantAnswer } from '#trainer/pipeline/rollout/gateway/assistantAnswer';
import { StreamDeltas, type Delta } from '#trainer/pipeline/rollout/gateway/streamDeltas';

const tokenizer = Tokenizer.load(path.join(builtInModelDir('base')));
const end = tokenizer.tokenId('<|im_end|>');

/** Streams `text` (then the end-of-turn token) and returns every delta and the whole answer. */
function stream(text: string, stop: string[] = []) {
  const tokens = [...tokenizer.encode(text), end];
  const deltas = new StreamDeltas(tokenizer, new Set([end]), stop);
  const sent: Delta[] = [];
  for (const token of tokens) {
    const d = deltas.push(token);
    if (d) sent.push(d);
  }
  const answer = assistantAnswer(
    { tokens, finish: 'stop_token' },
    { tokenizer, format: new HermesFormat(), endIds: new Set([end]), stop, callId: (k) => `call_${k}` },
  );
  const last = deltas.finish(answer);
  if (last) sent.push(last);
  const join = (key: 'content' | 'reasoning_content') => sent.map((d) => d[key] ?? '').join('');
  return { sent, answer, content: join('content'), reasoning: join('reasoning_content') };
}

describe('StreamDeltas', () => {
  it('adds up to the content; a call is never content, and comes whole at the end', () => {
    const { sent, answer, content } = stream(
      'Let me convert that. <tool_call>\n{"name": "exchange", "arguments": {"amount": 12}}\n</tool_call>',
    );
    assert.equal(content, answer.message.content);
    assert.equal(content, 'Let me convert that.');
    assert.ok(
      sent.every((d) => !(d.content ?? '').includes('<')),
      JSON.stringify(sent),
    );
    assert.deepEqual(sent.at(-1)!.tool_calls, [
      { index: 0, id: 'call_0', type: 'function', function: { name: 'exchange', arguments: '{"amount":12}' } },
    ]);
  });

  it('thinking streams as reasoning_content, apart from the content', () => {
    const { answer, content, reasoning } = stream(
      '<think>\nFirst the rate.\n</think>\n\nIt is <answer>11.06</answer>.',
    );
    assert.equal(reasoning, 'First the rate.');
    assert.equal(reasoning, answer.message.reasoning_content);
    assert.equal(content, 'It is <answer>11.06</answer>.');
    assert.equal(content, answer.message.content);
  });

  it('never sends half a character; stops before a stop string, as the answer does', () => {
    const euro = stream('Price: 12 € and ¥ 1.5 done');
    assert.equal(euro.content, 'Price: 12 € and ¥ 1.5 done');
    assert.ok(euro.sent.every((d) => !(d.content ?? '').includes('\uFFFD')));
    const stopped = stream('one two END three', ['END']);
    assert.equal(stopped.content, 'one two');
    assert.equal(stopped.answer.message.content, 'one two');
    assert.equal(stopped.answer.text, 'one two ');
  });
});
