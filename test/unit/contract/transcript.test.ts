import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import type { TrajectoryRecord } from '#trainer/contract/protocol';
import { formatRewardNumber, renderTranscript } from '#trainer/contract/transcript';
import { buildTrajectory } from '../../fixtures/recordedRun';

function twoCallTrajectory(): TrajectoryRecord {
  return {
    step: 4,
    index: 3,
    rowId: 'q-00042',
    group: 1,
    sample: 1,
    prompt: 'Where is Northwind Labs?\nAnswer briefly.',
    turns: [
      { index: 0, role: 'user', text: 'Where is Northwind Labs?\nAnswer briefly.', tokenStart: 0, tokenEnd: 12 },
      {
        index: 1,
        role: 'assistant',
        text: '<think>Two searches at once.</think>\n<tool_call>\n{"name": "search", "arguments": {"query": "Northwind"}}\n</tool_call>\n<tool_call>\n{"name": "search", "arguments": {"query": "Labs"\n</tool_call>',
        tokenStart: 12,
        tokenEnd: 53,
        finish: 'tool_call',
        logprob: { mean: -0.3163, min: -4.1 },
        entropy: { mean: 0.812 },
        toolCalls: [
          {
            index: 0,
            name: 'search',
            arguments: { query: 'Northwind' },
            raw: '{"name": "search", "arguments": {"query": "Northwind"}}',
            observation: 'Northwind Labs is in Veldmark.',
            truncated: false,
            latencyMs: 12.4,
            processReward: 0.2,
            tokenEnd: 40,
          },
          {
            index: 1,
            raw: '{"name": "search", "arguments": {"query": "Labs"',
            observation: 'Error (parse): …',
            truncated: false,
            error: { kind: 'parse', message: "Expected '}' at position 47\n    at parse (x.ts:1:1)" },
            latencyMs: 0,
            tokenEnd: 50,
          },
        ],
      },
      {
        index: 2,
        role: 'tool',
        text: '<tool_response>\nNorthwind Labs is in Veldmark.\n</tool_response>',
        tokenStart: 53,
        tokenEnd: 70,
      },
      {
        index: 3,
        role: 'assistant',
        text: '<answer>Veldmark</answer>',
        tokenStart: 70,
        tokenEnd: 80,
        finish: 'eos',
        logprob: { mean: -0.1, min: -0.5 },
      },
    ],
    finishReason: 'answered',
    answer: 'Veldmark',
    rewards: { outcome: 1, process: 0.2, total: 1.2, components: { exact_match: 1, search_hit: 0.2 } },
    advantage: 0.8711,
    lengths: { prompt: 12, response: 51, total: 80 },
    tokens: { ids: '', pieces: [], mask: '', logprobs: '' },
  };
}

describe('renderTranscript', () => {
  it('writes a header with step, row, group/sample, prompt, finish reason, rewards and advantage', () => {
    const { text } = renderTranscript(twoCallTrajectory());
    const lines = text.split('\n');
    assert.equal(lines[0], '═══ step 4 · #3 · row q-00042 · group 1 / sample 1 ═══');
    assert.equal(lines[1], 'prompt: Where is Northwind Labs? ⏎ Answer briefly.');
    assert.equal(lines[2], 'finish: answered · answer: Veldmark');
    assert.equal(lines[3], 'rewards: outcome 1.00 · process 0.20 · total 1.20 · advantage +0.87');
    assert.equal(lines[4], 'components: exact_match 1.00 · search_hit 0.20');
    assert.equal(lines[5], 'tokens: prompt 12 · response 51 · total 80');
  });

  it('starts each turn with a role line at the reported line, and keeps the model text verbatim', () => {
    const t = twoCallTrajectory();
    const { text, turnLines } = renderTranscript(t);
    const lines = text.split('\n');
    assert.equal(turnLines.length, 4);
    assert.equal(lines[turnLines[0]], '── user (turn 0) ─ 12 tokens ──');
    assert.equal(
      lines[turnLines[1]],
      '── assistant (turn 1) ─ 41 tokens · logprob mean -0.32 min -4.10 · entropy 0.81 · tool_call ──',
    );
    assert.equal(lines[turnLines[2]], '── tool (turn 2) ─ 17 tokens ──');
    // The body follows the header exactly as written, tags included.
    assert.equal(
      lines.slice(turnLines[1] + 1, turnLines[1] + 1 + t.turns[1].text.split('\n').length).join('\n'),
      t.turns[1].text,
    );
    assert.equal(lines.slice(turnLines[2] + 1, turnLines[2] + 4).join('\n'), t.turns[2].text);
  });

  it('points each call at its own <tool_call> line and annotates results, errors and process rewards', () => {
    const { text, callLines } = renderTranscript(twoCallTrajectory());
    const lines = text.split('\n');
    assert.deepEqual(
      callLines.map((c) => [c.turn, c.call]),
      [
        [1, 0],
        [1, 1],
      ],
    );
    assert.equal(lines[callLines[0].line], '<tool_call>');
    assert.equal(lines[callLines[0].line + 1], '{"name": "search", "arguments": {"query": "Northwind"}}');
    assert.equal(lines[callLines[1].line + 1], '{"name": "search", "arguments": {"query": "Labs"');
    assert.equal(lines[callLines[0].resultLine], '⟨call 0 search · process reward +0.20 · 12 ms⟩');
    // Only the first line of a multi-line error message: an annotation is one line.
    assert.equal(lines[callLines[1].resultLine], "⟨call 1 · error: parse — Expected '}' at position 47 · 0 ms⟩");
    assert.ok(callLines[0].resultLine > callLines[1].line, 'annotations follow the turn text');
  });

  it('ends with the finish reason, rewards and advantage', () => {
    const { text, endLine } = renderTranscript(twoCallTrajectory());
    const lines = text.split('\n');
    assert.equal(lines[endLine - 1], '── end ──');
    assert.equal(lines[endLine], '⟨answered · outcome 1.00 · process 0.20 · total 1.20 · advantage +0.87⟩');
    assert.ok(text.endsWith('⟩\n'));
  });

  it('leaves advantage out when the run has none, and clips long turns when asked', () => {
    const t = { ...twoCallTrajectory(), advantage: undefined };
    t.turns = t.turns.map((turn) => (turn.index === 2 ? { ...turn, text: 'x'.repeat(100) } : turn));
    const { text } = renderTranscript(t, { maxTurnChars: 10, digits: 3 });
    assert.match(text, /^rewards: outcome 1\.000 · process 0\.200 · total 1\.200$/m);
    assert.match(text, /^x{10}… \(90 more characters\)$/m);
  });

  it('a live snapshot says what is still to come; after the run ended, that it was never known', () => {
    // Stopped before the first call ran: nothing after it exists yet.
    const full = twoCallTrajectory();
    const live: TrajectoryRecord = {
      ...full,
      turns: [
        full.turns[0],
        {
          ...full.turns[1],
          toolCalls: [
            {
              index: 0,
              name: 'search',
              arguments: { query: 'Northwind' },
              raw: full.turns[1].toolCalls![0].raw,
              observation: '',
              truncated: false,
              latencyMs: 0,
              pending: true,
              tokenEnd: 40,
            },
          ],
        },
      ],
      rewards: { outcome: 0, process: 0, total: 0, components: {} },
      advantage: undefined,
      answer: undefined,
      inFlight: { ended: false },
    };
    const during = renderTranscript(live);
    const duringLines = during.text.split('\n');
    assert.equal(duringLines[2], 'finish: in progress');
    assert.match(duringLines[3], /^rewards: pending/);
    assert.equal(duringLines[during.callLines[0].resultLine], '⟨call 0 search · not run yet⟩');
    assert.equal(duringLines[during.endLine], '⟨in progress · rewards pending⟩');

    const after = renderTranscript(live, { endedBy: 'the run stopped' });
    const lines = after.text.split('\n');
    assert.equal(
      lines[1],
      'note: the run stopped before step 4 was recorded; this is the trajectory as the debugger last saw it',
    );
    assert.equal(lines[3], 'finish: not finished');
    assert.equal(lines[4], 'rewards: never computed (the run stopped before step 4 was scored)');
    assert.equal(lines[after.callLines[0].resultLine], '⟨call 0 search · result never known: the run stopped first⟩');
    assert.equal(lines[after.endLine], '⟨not finished · rewards never computed⟩');
    assert.equal(lines[after.callLines[0].line], '<tool_call>', 'the line tables follow the extra line');
    assert.doesNotMatch(after.text, /not run yet|pending|in progress/);

    // A trajectory that had reached its end keeps its finish reason; a recorded one ignores endedBy.
    assert.match(
      renderTranscript({ ...live, inFlight: { ended: true } }, { endedBy: 'the run stopped' }).text,
      /^finish: answered$/m,
    );
    assert.equal(renderTranscript(full, { endedBy: 'the run stopped' }).text, renderTranscript(full).text);
  });

  it('renders every recorded fixture trajectory with consistent line tables', () => {
    let seed = 11;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let i = 0; i < 40; i++) {
      const t = buildTrajectory(1 + (i % 5), i, 4, random);
      const { text, turnLines, callLines, endLine } = renderTranscript(t);
      const lines = text.split('\n');
      assert.equal(turnLines.length, t.turns.length);
      for (const [k, line] of turnLines.entries())
        assert.match(lines[line], new RegExp(`^── ${t.turns[k].role} \\(turn ${k}\\)`));
      assert.equal(
        callLines.length,
        t.turns.reduce((n, turn) => n + (turn.toolCalls?.length ?? 0), 0),
      );
      for (const c of callLines) {
        assert.equal(lines[c.line], '<tool_call>');
        assert.match(lines[c.resultLine], /^⟨call \d+/);
      }
      assert.match(lines[endLine], new RegExp(`^⟨${t.finishReason} · outcome`));
    }
  });
});

describe('formatNumber', () => {
  it('signs what is asked, never shows -0.00, and keeps non-finite values readable', () => {
    assert.equal(formatRewardNumber(0.871, 2, true), '+0.87');
    assert.equal(formatRewardNumber(-0.001, 2, true), '+0.00');
    assert.equal(formatRewardNumber(-1.5, 2, true), '-1.50');
    assert.equal(formatRewardNumber(1, 2, false), '1.00');
    assert.equal(formatRewardNumber(Number.NaN, 2, false), 'NaN');
  });
});
