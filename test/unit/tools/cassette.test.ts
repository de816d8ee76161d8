/**
 * Recorded tool results at the runner's seam: what a recording run writes, how a replay finds a
 * call again (origin, canonical arguments, the k-th identical call), and what a call without a
 * recording gets — an `unrecorded` error observation or a live call, as configured.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { z } from 'zod';
import { datasetFromRows } from '#trainer/foundations/data';
import { defineTool, ToolRunner, ToolSet, type ToolCallRequest, type TrajectoryView } from '#trainer/foundations/tools';
import { canonicalJson, CassettePlayer, ToolCassette } from '#trainer/foundations/tools/cassette';
import { CassetteEntry } from '#trainer/contract/protocol/cassetteFile';
import { parseWith } from '#trainer/contract/protocol/parse';

const row = datasetFromRows('cassette', [{ id: 'r', prompt: 'x' }]).rows[0];

function view(index: number): TrajectoryView {
  return { index, rowId: 'r', group: 0, sample: 0, messages: [], calls: [] };
}

function request(name: string, args: unknown, trajectory = 0, callIndex = 0, turn = 0): ToolCallRequest {
  return { name, arguments: args, trajectory: view(trajectory), turn, callIndex, row };
}

/** A tool whose answers change with every call (a clock, a web search): only a recording repeats them. */
function counterTool() {
  let calls = 0;
  const tool = defineTool({
    name: 'lookup',
    description: 'Looks up.',
    parameters: z.object({ q: z.string(), k: z.int().default(1) }),
    execute: ({ q }, ctx) => {
      calls++;
      ctx.log.info(`looking up ${q}`);
      return { content: [{ type: 'text' as const, text: `${q}#${calls}` }], data: { call: calls } };
    },
  });
  return { tool, count: () => calls };
}

async function record(requests: ToolCallRequest[][], step = 1) {
  const { tool } = counterTool();
  const entries: CassetteEntry[] = [];
  const cassette = new ToolCassette({
    record: (e) => entries.push(...e.map((x) => parseWith(CassetteEntry, JSON.parse(JSON.stringify(x)), 'entry'))),
  });
  cassette.enter('train', step);
  const runner = new ToolRunner(new ToolSet([tool]), { interceptor: cassette });
  const outcomes = [];
  for (const round of requests) outcomes.push(...(await runner.run(round)));
  return { entries, outcomes };
}

describe('canonicalJson', () => {
  it('sorts keys at every level, so key order does not matter', () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }),
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    assert.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
    assert.notEqual(canonicalJson({ a: 1 }), canonicalJson({ a: '1' }));
  });
});

describe('ToolCassette', () => {
  it('records each call that passed validation, with its result, data, logs and where it was made', async () => {
    const { entries, outcomes } = await record([
      [request('lookup', { q: 'x' }, 0, 0), request('lookup', { q: 1 }, 1, 0), request('nope', {}, 2, 0)],
    ]);
    assert.equal(outcomes[1].error?.kind, 'invalid_arguments');
    assert.equal(entries.length, 1, 'invalid and unknown calls do not depend on the tool: not recorded');
    assert.deepEqual(
      { ...entries[0], latencyMs: 0 },
      {
        set: 'train',
        step: 1,
        trajectory: 0,
        turn: 0,
        call: 0,
        tool: 'lookup',
        arguments: { k: 1, q: 'x' },
        result: { content: [{ type: 'text', text: 'x#1' }], data: { call: 1 } },
        latencyMs: 0,
        logs: ['info: looking up x'],
      },
    );
  });

  it('replays calls in their recorded order per sequence, without calling the tool', async () => {
    // Sequence 0 asks for "x" twice, sequence 1 once: three different answers were recorded.
    const { entries, outcomes: live } = await record([
      [request('lookup', { q: 'x' }, 0), request('lookup', { q: 'x' }, 1)],
      [request('lookup', { k: 1, q: 'x' }, 0, 0, 1)],
    ]);
    assert.deepEqual(
      live.map((o) => o.result?.content[0]),
      [
        { type: 'text', text: 'x#1' },
        { type: 'text', text: 'x#2' },
        { type: 'text', text: 'x#3' },
      ],
    );
    const { tool, count } = counterTool();
    const cassette = new ToolCassette({ player: new CassettePlayer(entries, 'test cassette') });
    cassette.enter('train', 1);
    const runner = new ToolRunner(new ToolSet([tool]), { interceptor: cassette });
    // Asked in another order, and with the arguments' keys in another order: each sequence gets its own recordings.
    const replayed = [
      ...(await runner.run([request('lookup', { q: 'x' }, 1)])),
      ...(await runner.run([request('lookup', { q: 'x' }, 0), request('lookup', { q: 'x', k: 1 }, 0)])),
    ];
    assert.equal(count(), 0, 'the tool was never called');
    assert.deepEqual(
      replayed.map((o) => [(o.result?.content[0] as { text: string }).text, o.result?.data, o.logs]),
      [
        ['x#2', { call: 2 }, ['info: looking up x']],
        ['x#1', { call: 1 }, ['info: looking up x']],
        ['x#3', { call: 3 }, ['info: looking up x']],
      ],
    );
    assert.deepEqual(
      replayed.map((o) => o.latencyMs),
      [entries[1].latencyMs, entries[0].latencyMs, entries[2].latencyMs],
      'the recorded latency',
    );
    assert.deepEqual(cassette.counts, { replayed: 3, missed: 0 });
  });

  it('answers a call recorded elsewhere with that recording (a re-roll asking what another trajectory asked)', async () => {
    const { entries } = await record([[request('lookup', { q: 'x' }, 3)]], 2);
    const cassette = new ToolCassette({ player: new CassettePlayer(entries, 'test cassette') });
    cassette.enter('train', 7);
    const outcomes = await new ToolRunner(new ToolSet([counterTool().tool]), { interceptor: cassette }).run([
      request('lookup', { q: 'x' }, 0),
    ]);
    assert.equal((outcomes[0].result?.content[0] as { text: string }).text, 'x#1');
  });

  it("a call without a recording: an `unrecorded` error observation with onMiss 'error' (the default)", async () => {
    const { entries } = await record([[request('lookup', { q: 'x' }, 0)]]);
    const { tool, count } = counterTool();
    const cassette = new ToolCassette({ player: new CassettePlayer(entries, 'run-a/cassette.jsonl') });
    cassette.enter('train', 1);
    const [outcome] = await new ToolRunner(new ToolSet([tool]), { interceptor: cassette }).run([
      request('lookup', { q: 'y' }, 0),
    ]);
    assert.equal(count(), 0);
    assert.equal(outcome.error?.kind, 'unrecorded');
    assert.match(
      outcome.error!.message,
      /lookup was called with \{"k":1,"q":"y"\}, which run-a\/cassette\.jsonl has no recording of/,
    );
    assert.deepEqual(cassette.counts, { replayed: 0, missed: 1 });
  });

  it("a call without a recording runs the tool with onMiss 'live', and is recorded if the cassette records", async () => {
    const { entries } = await record([[request('lookup', { q: 'x' }, 0)]]);
    const { tool, count } = counterTool();
    const again: CassetteEntry[] = [];
    const cassette = new ToolCassette({
      player: new CassettePlayer(entries, 'test cassette'),
      onMiss: 'live',
      record: (e) => again.push(...e),
    });
    cassette.enter('train', 1);
    const outcomes = await new ToolRunner(new ToolSet([tool]), { interceptor: cassette }).run([
      request('lookup', { q: 'x' }, 0),
      request('lookup', { q: 'y' }, 0, 1),
    ]);
    assert.equal(count(), 1, 'only the unrecorded call ran');
    assert.deepEqual(
      outcomes.map((o) => (o.result?.content[0] as { text: string }).text),
      ['x#1', 'y#1'],
    );
    assert.deepEqual(
      again.map((e) => [e.call, (e.result?.content[0] as { text: string }).text]),
      [
        [0, 'x#1'],
        [1, 'y#1'],
      ],
      'replayed and live calls alike',
    );
  });
});
