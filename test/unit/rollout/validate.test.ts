import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { datasetFromRows } from '#trainer/foundations/data';
import { checkTrajectory, TrajectoryInvariantError, type Trajectory } from '#trainer/pipeline/rollout';

/** prompt (3) · assistant turn with a call ending on token 4 (2) · tool turn (2) · assistant answer (2) */
function valid(): Trajectory {
  const row = datasetFromRows('v', [{ id: 'r', prompt: 'x' }]).rows[0];
  const call = {
    turn: 0,
    turnIndex: 1,
    index: 0,
    name: 'search',
    raw: '',
    observation: 'o',
    truncated: false,
    latencyMs: 1,
    tokenEnd: 4,
    logs: [],
  };
  return {
    index: 0,
    rowId: 'r',
    group: 0,
    sample: 0,
    row,
    prompt: 'x',
    messages: [],
    ids: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    mask: [0, 0, 0, 1, 1, 0, 0, 1, 1],
    logprobs: [0, 0, 0, -0.5, -0.1, 0, 0, -1, 0],
    entropies: [0, 0, 0, 1, 1, 0, 0, 1, 1],
    promptLength: 3,
    turns: [
      { index: 0, role: 'user', tokenStart: 0, tokenEnd: 3 },
      {
        index: 1,
        role: 'assistant',
        tokenStart: 3,
        tokenEnd: 5,
        finish: 'tool_call',
        assistantTurn: 0,
        content: '',
        calls: [call],
      },
      { index: 2, role: 'tool', tokenStart: 5, tokenEnd: 7 },
      { index: 3, role: 'assistant', tokenStart: 7, tokenEnd: 9, finish: 'eos', assistantTurn: 1, content: '' },
    ],
    calls: [call],
    finishReason: 'answered',
    historyRewrites: [],
  };
}

describe('checkTrajectory', () => {
  it('accepts a consistent trajectory', () => {
    assert.doesNotThrow(() => checkTrajectory(valid()));
  });

  it('names the first broken invariant', () => {
    const cases: [(t: Trajectory) => void, RegExp][] = [
      [(t) => t.logprobs.pop(), /logprobs has 8 entries for 9 tokens/],
      [(t) => (t.mask[1] = 1), /token 1 is in the prompt but marked as generated/],
      [(t) => (t.logprobs[3] = NaN), /logprobs\[3\] is NaN on a policy token/],
      [(t) => (t.logprobs[4] = 0.2), /logprobs\[4\] is 0\.2 on a policy token/],
      [(t) => (t.logprobs[5] = -1), /logprobs\[5\] is -1 on a context token/],
      [(t) => (t.mask[5] = 1), /token 5 of tool turn 2 has mask 1/],
      [(t) => (t.turns[2].tokenStart = 6), /turns\[2\] covers \[6, 7\), expected to start at 5/],
      [(t) => t.turns.pop(), /turns cover 7 of 9 tokens/],
      [(t) => (t.turns[1].calls![0].tokenEnd = 5), /call 0 of turn 1 ends on token 5, outside its turn/],
      [(t) => t.calls.pop(), /0 calls listed, 1 on turns/],
    ];
    for (const [corrupt, message] of cases) {
      const t = valid();
      corrupt(t);
      assert.throws(
        () => checkTrajectory(t),
        (e: unknown) =>
          e instanceof TrajectoryInvariantError &&
          /^trajectory 0 \(row r\): /.test(e.message) &&
          message.test(e.message),
        String(message),
      );
    }
  });
});
