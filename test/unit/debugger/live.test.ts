import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { holdConfiguration } from '../../../extension/debugger/live/holdPolicy';
import { liveFacts, livePosition, liveView } from '../../../extension/debugger/live/liveView';
import { callView, turnContext } from '../../../extension/debugger/breakpoints/turnContext';
import type { ToolCallRecord, TrajectoryRecord } from '#trainer/contract/protocol';
import { renderTranscript } from '#trainer/contract/transcript';

const none = { tools: false, filters: [], lines: false };

describe('holding policy', () => {
  it('does not hold when nothing could stop, so training runs at full speed', () => {
    assert.deepEqual(holdConfiguration({ noDebug: false, moving: false, breakpoints: none }), { hold: false });
  });

  it('never holds without debugging, whatever is set', () => {
    assert.deepEqual(
      holdConfiguration({
        noDebug: true,
        moving: true,
        breakpoints: { tools: true, filters: ['toolThrew'], lines: true },
      }),
      { hold: false },
    );
  });

  it('holds only before calls for function breakpoints, and where each filter can fire', () => {
    assert.deepEqual(holdConfiguration({ noDebug: false, moving: false, breakpoints: { ...none, tools: true } }), {
      hold: true,
      points: ['call'],
    });
    assert.deepEqual(
      holdConfiguration({
        noDebug: false,
        moving: false,
        breakpoints: { ...none, filters: ['toolCallParse', 'nonFiniteLoss'] },
      }),
      { hold: true, points: ['result', 'update'] },
    );
    assert.deepEqual(
      holdConfiguration({
        noDebug: false,
        moving: false,
        breakpoints: { ...none, tools: true, filters: ['truncated'] },
      }),
      { hold: true, points: ['turn', 'call', 'result', 'end'] },
    );
  });

  it('holds everywhere while a step, a pause or a stop on entry is pending, or for transcript lines', () => {
    assert.deepEqual(holdConfiguration({ noDebug: false, moving: true, breakpoints: none }), { hold: true });
    assert.deepEqual(holdConfiguration({ noDebug: false, moving: false, breakpoints: { ...none, lines: true } }), {
      hold: true,
    });
  });
});

function call(index: number, extra: Partial<ToolCallRecord> = {}): ToolCallRecord {
  return {
    index,
    name: 'search',
    arguments: { query: 'Nulu' },
    raw: '{"name": "search"}',
    observation: '',
    truncated: false,
    latencyMs: 0,
    tokenEnd: 20,
    ...extra,
  };
}

function inFlight(turns: TrajectoryRecord['turns'], ended = false): TrajectoryRecord {
  return {
    step: 3,
    index: 1,
    rowId: 'train-0001',
    group: 0,
    sample: 1,
    prompt: 'In which city was Ada born?',
    turns,
    finishReason: 'answered',
    rewards: { outcome: 0, process: 0, total: 0, components: {} },
    lengths: { prompt: 10, response: 12, total: 22 },
    tokens: { ids: '', pieces: [], mask: '', logprobs: '' },
    inFlight: { ended },
  };
}

const prompt: TrajectoryRecord['turns'] = [
  { index: 0, role: 'system', text: 'sys', tokenStart: 0, tokenEnd: 4 },
  { index: 1, role: 'user', text: 'q', tokenStart: 4, tokenEnd: 10 },
];

describe('live snapshots', () => {
  it('places each trajectory by its record: before its calls, after them, after its turn, at its end', () => {
    const assistant = (calls?: ToolCallRecord[]) => ({
      index: 2,
      role: 'assistant' as const,
      text: '<tool_call>…',
      tokenStart: 10,
      tokenEnd: 21,
      finish: 'tool_call' as const,
      ...(calls ? { toolCalls: calls } : {}),
    });
    assert.deepEqual(livePosition(inFlight(prompt), 0), { trajectory: 0, phase: 'turn', turn: 1, call: -1 });
    assert.deepEqual(livePosition(inFlight([...prompt, assistant()]), 0), {
      trajectory: 0,
      phase: 'turn',
      turn: 2,
      call: -1,
    });
    assert.deepEqual(
      livePosition(
        inFlight([...prompt, assistant([call(0, { observation: 'x', latencyMs: 3 }), call(1, { pending: true })])]),
        2,
      ),
      { trajectory: 2, phase: 'call', turn: 2, call: 1 },
    );
    assert.deepEqual(
      livePosition(inFlight([...prompt, assistant([call(0, { observation: 'x' }), call(1, { observation: 'y' })])]), 2),
      { trajectory: 2, phase: 'result', turn: 2, call: 1 },
    );
    assert.deepEqual(livePosition(inFlight([...prompt, assistant()], true), 1), {
      trajectory: 1,
      phase: 'end',
      turn: 3,
      call: -1,
    });
  });

  it('shows calls that have not run as pending, even beside the one stopped at, and no rewards yet', () => {
    const record = inFlight([
      ...prompt,
      {
        index: 2,
        role: 'assistant',
        text: 't',
        tokenStart: 10,
        tokenEnd: 21,
        toolCalls: [call(0, { pending: true }), call(1, { pending: true })],
      },
    ]);
    const view = liveView({
      id: 7,
      point: { step: 3, trajectory: 0, kind: 'call', turn: 2, call: 1 },
      trajectories: [record],
    });
    assert.deepEqual(view.point, { trajectory: 0, phase: 'call', turn: 2, call: 1 });
    assert.equal(
      callView(record.turns[2].toolCalls![0], 2, view.point).state,
      'pending',
      'call 0 runs together with call 1, not before it',
    );
    const context = turnContext(3, record, view.point, undefined);
    assert.equal(context.reward, undefined);
    assert.equal(context.advantage, undefined);
    assert.equal(context.finishReason, undefined, 'not final before the end');
    assert.equal((context.call as { name: string }).name, 'search');
    const transcript = renderTranscript(record).text;
    assert.match(transcript, /^finish: in progress$/m);
    assert.match(transcript, /^rewards: pending/m);
    assert.match(transcript, /⟨call 1 search · not run yet⟩/);
  });

  it('reports a parse failure or an unknown tool at the result, where live finds them', () => {
    const failed = call(0, {
      name: undefined,
      arguments: undefined,
      error: { kind: 'parse', message: 'not JSON' },
      observation: 'Error: not JSON',
    });
    const record = inFlight([
      ...prompt,
      { index: 2, role: 'assistant', text: 't', tokenStart: 10, tokenEnd: 21, toolCalls: [failed] },
    ]);
    const facts = liveFacts(record, { trajectory: 0, phase: 'result', turn: 2, call: 0 }, undefined);
    assert.deepEqual(
      facts.exceptions.map((e) => e.filter),
      ['toolCallParse'],
    );
    assert.equal(facts.toolName, undefined, 'a function breakpoint does not fire at a result');
    const unknown = call(0, { name: 'serach', error: { kind: 'unknown_tool', message: 'no tool "serach"' } });
    const other = inFlight([
      ...prompt,
      { index: 2, role: 'assistant', text: 't', tokenStart: 10, tokenEnd: 21, toolCalls: [unknown] },
    ]);
    assert.deepEqual(
      liveFacts(other, { trajectory: 0, phase: 'result', turn: 2, call: 0 }, undefined).exceptions.map((e) => e.id),
      ['unknown_tool'],
    );
  });

  it('shows the whole step after the update: every trajectory at its end', () => {
    const scored = {
      ...inFlight(prompt, true),
      inFlight: undefined,
      rewards: { outcome: 1, process: 0, total: 1, components: { exact_match: 1 } },
      advantage: 0.5,
    };
    const view = liveView({
      id: 9,
      point: { step: 3, trajectory: 0, kind: 'update' },
      trajectories: [scored, { ...scored, index: 1 }],
      metrics: { step: 3, time: 't', kind: 'train', values: { 'reward/mean': 1 } },
    });
    assert.equal(view.point.phase, 'update');
    assert.deepEqual(
      view.positions.map((p) => p.phase),
      ['end', 'end'],
    );
    assert.equal(turnContext(3, scored, view.positions[0], view.metrics).advantage, 0.5);
  });
});
