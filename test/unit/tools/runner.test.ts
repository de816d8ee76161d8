import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { MAX_TOOL_TEXT_CHARS, observationText } from '#trainer/foundations/tools/result';
import { z } from 'zod';
import { datasetFromRows } from '#trainer/foundations/data';
import {
  defineTool,
  ToolRunner,
  ToolSet,
  type ToolCallRequest,
  type ToolLogLine,
  type TrajectoryView,
} from '#trainer/foundations/tools';

const row = datasetFromRows('runner', [{ id: 'r', prompt: 'x', toolArgs: { echo: { prefix: '>' } } }]).rows[0];

function view(index: number): TrajectoryView {
  return { index, rowId: 'r', group: 0, sample: 0, messages: [], calls: [] };
}

function request(name: string, args: unknown, trajectory = 0, callIndex = 0): ToolCallRequest {
  return { name, arguments: args, trajectory: view(trajectory), turn: 0, callIndex, row };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('ToolRunner', () => {
  it('validates arguments, runs the tool with its context, and keeps order', async () => {
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes.',
      parameters: z.object({ text: z.string(), times: z.int().min(1).default(1) }),
      execute: ({ text, times }, ctx) =>
        `${String(ctx.rowArgs?.['prefix'] ?? '')}${text.repeat(times)}@${ctx.trajectory.index}.${ctx.callIndex}`,
    });
    const runner = new ToolRunner(new ToolSet([echo]));
    const outcomes = await runner.run([
      request('echo', { text: 'a' }, 0, 0),
      request('echo', { text: 'b', times: 2 }, 1, 3),
    ]);
    assert.deepEqual(
      outcomes.map((o) => [o.arguments, o.result?.content, o.error]),
      [
        [{ text: 'a', times: 1 }, [{ type: 'text', text: '>a@0.0' }], undefined],
        [{ text: 'b', times: 2 }, [{ type: 'text', text: '>bb@1.3' }], undefined],
      ],
    );
  });

  it('reports unknown tools, schema failures, throws, timeouts and bad output as error kinds', async () => {
    let aborted = false;
    const tools = new ToolSet([
      defineTool({
        name: 'add',
        description: 'Adds.',
        parameters: z.object({ a: z.number(), b: z.number() }),
        execute: ({ a, b }) => String(a + b),
      }),
      defineTool({
        name: 'boom',
        description: 'Throws.',
        parameters: z.object({}),
        execute: () => {
          throw new RangeError('out of range');
        },
      }),
      defineTool({
        name: 'rejects',
        description: 'Rejects with a string.',
        parameters: z.object({}),
        execute: () => Promise.reject('plain string'),
      }),
      defineTool({
        name: 'hang',
        description: 'Hangs.',
        parameters: z.object({}),
        timeoutMs: 30,
        execute: (_a, ctx) => new Promise(() => ctx.signal.addEventListener('abort', () => (aborted = true))),
      }),
      defineTool({
        name: 'odd',
        description: 'Returns a number.',
        parameters: z.object({}),
        execute: () => 42 as unknown as string,
      }),
      defineTool({
        name: 'parts',
        description: 'Returns bad parts.',
        parameters: z.object({}),
        execute: () => ({ content: [{ type: 'image', url: 'x' }] }) as never,
      }),
    ]);
    const outcomes = await new ToolRunner(tools).run([
      request('sub', {}),
      request('add', { a: 1, b: 'two' }),
      request('add', [1, 2]),
      request('boom', {}),
      request('rejects', {}),
      request('hang', {}),
      request('odd', {}),
      request('parts', {}),
    ]);
    const errors = outcomes.map((o) => o.error);
    assert.deepEqual(errors[0], {
      kind: 'unknown_tool',
      message: 'there is no tool named "sub"; the tools are: add, boom, rejects, hang, odd, parts',
      summary: 'no tool "sub"; tools: add, boom, rejects, hang, odd, parts',
    });
    assert.deepEqual(errors[1], {
      kind: 'invalid_arguments',
      message: 'arguments of add do not match its schema: b: Invalid input: expected number, received string',
      summary: '"b" must be a number',
    });
    assert.deepEqual(errors[2], {
      kind: 'invalid_arguments',
      message: 'arguments of add do not match its schema: (root): Invalid input: expected object, received array',
      summary: 'the arguments must be an object',
    });
    assert.equal(errors[3]!.kind, 'threw');
    assert.match(errors[3]!.message, /^RangeError: out of range\n\s+at .*runner\.test\.ts/);
    assert.deepEqual(errors[4], { kind: 'threw', message: 'thrown value: plain string' });
    assert.deepEqual(errors[5], { kind: 'timeout', message: 'hang did not finish within 30 ms' });
    assert.ok(aborted);
    assert.match(
      errors[6]!.message,
      /^TypeError: tool "odd" returned a number \(42\); expected a string or \{ content: \[\{ type: "text", text \} \| \{ type: "image", data: Uint8Array \| base64 string \}\], data\? \}/,
    );
    assert.match(
      errors[7]!.message,
      /^TypeError: tool "parts" returned content\[0\], an image whose data is undefined; expected PNG, JPEG or WebP bytes/,
    );
    assert.ok(outcomes[5].latencyMs >= 25 && outcomes[5].latencyMs < 1000);
    assert.equal(outcomes[0].latencyMs, 0);
  });

  it('describes anything a tool throws without throwing itself: a BigInt, a circular object, a null-prototype object, a hostile Proxy', async () => {
    const circular: Record<string, unknown> = { kind: 'loop' };
    circular.self = circular;
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('no');
        },
        getPrototypeOf: () => {
          throw new Error('no');
        },
        ownKeys: () => {
          throw new Error('no');
        },
      },
    );
    const thrown: Array<[string, unknown]> = [
      ['bigint', 10n],
      ['circular', circular],
      ['bare', Object.assign(Object.create(null), { a: 1 })],
      ['hostile', hostile],
      ['huge', 'x'.repeat(100_000)],
    ];
    const tools = new ToolSet(
      thrown.map(([name, value]) =>
        defineTool({
          name,
          description: 'Throws.',
          parameters: z.object({}),
          execute: () => {
            throw value;
          },
        }),
      ),
    );
    const outcomes = await new ToolRunner(tools).run(thrown.map(([name]) => request(name, {})));
    assert.ok(outcomes.every((o) => o.error?.kind === 'threw'));
    const [bigint, loop, bare, proxy, huge] = outcomes.map((o) => o.error!.message);
    assert.equal(bigint, 'thrown value: 10n');
    assert.equal(loop, "thrown value: <ref *1> { kind: 'loop', self: [Circular *1] }");
    assert.equal(bare, 'thrown value: [Object: null prototype] { a: 1 }');
    assert.match(proxy, /^thrown value: /);
    assert.ok(huge.length < 4200 && /… \(\d+ more characters\)$/.test(huge), 'a huge value is cut');
  });

  it('fails a call whose text is over the output limit, naming its size', async () => {
    const tools = new ToolSet([
      defineTool({
        name: 'flood',
        description: 'Too much.',
        parameters: z.object({}),
        execute: () => 'x'.repeat(MAX_TOOL_TEXT_CHARS + 1),
      }),
      defineTool({
        name: 'parts',
        description: 'Just enough, in parts.',
        parameters: z.object({}),
        execute: () => ({
          content: [
            { type: 'text', text: 'y'.repeat(MAX_TOOL_TEXT_CHARS / 2) },
            { type: 'text', text: 'z'.repeat(MAX_TOOL_TEXT_CHARS / 2) },
          ],
        }),
      }),
    ]);
    const [flood, parts] = await new ToolRunner(tools).run([request('flood', {}), request('parts', {})]);
    assert.equal(flood.error?.kind, 'threw');
    assert.match(
      flood.error!.message,
      /^RangeError: tool "flood" returned 1,000,001 characters of text; the limit is 1,000,000/,
    );
    assert.equal(parts.error, undefined);
  });

  it("validates with async refinements and reports a refinement that throws as the tool's fault", async () => {
    const tools = new ToolSet([
      defineTool({
        name: 'known',
        description: 'Only known ids.',
        parameters: z.object({ id: z.string().refine(async (id) => id.startsWith('doc-'), 'unknown document id') }),
        execute: ({ id }) => id,
      }),
      defineTool({
        name: 'buggy',
        description: 'Buggy schema.',
        parameters: z.object({
          id: z.string().refine(() => {
            throw new Error('refine bug');
          }),
        }),
        execute: () => '',
      }),
    ]);
    const [good, bad, buggy] = await new ToolRunner(tools).run([
      request('known', { id: 'doc-1' }),
      request('known', { id: 'x' }),
      request('buggy', { id: 'x' }),
    ]);
    assert.equal(good.result && observationText(good.result), 'doc-1');
    assert.deepEqual(bad.error, {
      kind: 'invalid_arguments',
      message: 'arguments of known do not match its schema: id: unknown document id',
      summary: '"id": unknown document id',
    });
    assert.equal(buggy.error?.kind, 'threw');
    assert.match(buggy.error!.message, /^validating the arguments of buggy threw: Error: refine bug/);
  });

  it('runs calls concurrently, each tool within its own concurrency limit', async () => {
    const running = { narrow: 0, wide: 0 };
    const peak = { narrow: 0, wide: 0 };
    const make = (name: 'narrow' | 'wide', concurrency: number) =>
      defineTool({
        name,
        description: 'Sleeps.',
        parameters: z.object({}),
        concurrency,
        execute: async () => {
          running[name]++;
          peak[name] = Math.max(peak[name], running[name]);
          await sleep(15);
          running[name]--;
          return 'ok';
        },
      });
    const runner = new ToolRunner(new ToolSet([make('narrow', 2), make('wide', 16)]));
    const started = performance.now();
    const outcomes = await runner.run([
      ...Array.from({ length: 6 }, (_, i) => request('narrow', {}, i)),
      ...Array.from({ length: 6 }, (_, i) => request('wide', {}, i)),
    ]);
    assert.ok(outcomes.every((o) => !o.error));
    assert.deepEqual(peak, { narrow: 2, wide: 6 });
    // Waiting for a slot is not latency: each call reports about its own 15 ms.
    assert.ok(outcomes.every((o) => o.latencyMs < 100));
    assert.ok(performance.now() - started < 1000);
  });

  it('sends a batch tool its calls from the whole round in chunks; an Error entry fails one call', async () => {
    const batches: string[][] = [];
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks up many at once.',
      parameters: z.object({ key: z.string() }),
      maxBatchSize: 3,
      execute: () => {
        throw new Error('execute is not used when executeBatch exists');
      },
      executeBatch: async (calls) => {
        batches.push(calls.map((c) => `${c.ctx.trajectory.index}:${c.args.key}`));
        return calls.map((c) =>
          c.args.key === 'missing' ? new Error(`no entry ${c.args.key}`) : `value of ${c.args.key}`,
        );
      },
    });
    const outcomes = await new ToolRunner(new ToolSet([lookup])).run(
      ['a', 'b', 'missing', 'd', 'e'].map((key, i) => request('lookup', { key }, i)),
    );
    assert.deepEqual(batches, [
      ['0:a', '1:b', '2:missing'],
      ['3:d', '4:e'],
    ]);
    assert.deepEqual(
      outcomes.map((o) => (o.result ? observationText(o.result) : undefined) ?? o.error?.message.split('\n')[0]),
      ['value of a', 'value of b', 'Error: no entry missing', 'value of d', 'value of e'],
    );
    assert.equal(outcomes[2].error?.kind, 'threw');
  });

  it('fails every call of a batch that returns the wrong number of outputs, or times out', async () => {
    const short = defineTool({
      name: 'short',
      description: 'Drops one.',
      parameters: z.object({}),
      execute: () => '',
      executeBatch: async (calls) => calls.slice(1).map(() => 'x'),
    });
    const slow = defineTool({
      name: 'slow',
      description: 'Slow batch.',
      parameters: z.object({}),
      timeoutMs: 20,
      execute: () => '',
      executeBatch: () => new Promise(() => {}),
    });
    const outcomes = await new ToolRunner(new ToolSet([short, slow])).run([
      request('short', {}, 0),
      request('short', {}, 1),
      request('slow', {}, 2),
      request('slow', {}, 3),
    ]);
    assert.match(
      outcomes[0].error!.message,
      /^TypeError: tool "short": executeBatch returned 1 outputs for 2 calls; return one output \(or Error\) per call, in order/,
    );
    assert.equal(outcomes[1].error?.kind, 'threw');
    assert.deepEqual(
      [outcomes[2].error, outcomes[3].error],
      [
        { kind: 'timeout', message: 'slow did not finish within 20 ms' },
        { kind: 'timeout', message: 'slow did not finish within 20 ms' },
      ],
    );
  });

  it('keeps what a tool logs on its outcome and forwards it', async () => {
    const lines: ToolLogLine[] = [];
    const chatty = defineTool({
      name: 'chatty',
      description: 'Logs.',
      parameters: z.object({}),
      execute: (_a, ctx) => {
        ctx.log.info('starting');
        ctx.log.warn('slow index');
        return 'done';
      },
    });
    const [outcome] = await new ToolRunner(new ToolSet([chatty]), { onLog: (line) => lines.push(line) }).run([
      request('chatty', {}, 4),
    ]);
    assert.deepEqual(outcome.logs, ['info: starting', 'warn: slow index']);
    assert.deepEqual(lines, [
      { tool: 'chatty', trajectory: 4, turn: 0, level: 'info', message: 'starting' },
      { tool: 'chatty', trajectory: 4, turn: 0, level: 'warn', message: 'slow index' },
    ]);
  });

  it('aborts running calls when the rollout is stopped', async () => {
    const controller = new AbortController();
    const waits = defineTool({
      name: 'waits',
      description: 'Waits for abort.',
      parameters: z.object({}),
      execute: (_a, ctx) =>
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    });
    const pending = new ToolRunner(new ToolSet([waits]), { signal: controller.signal }).run([request('waits', {})]);
    setTimeout(() => controller.abort(new Error('rollout stopped')), 10);
    const [outcome] = await pending;
    assert.equal(outcome.error?.kind, 'threw');
    assert.match(outcome.error!.message, /^Error: rollout stopped/);
  });

  it('ties a round of 24 concurrent calls to the stop signal with one listener: no MaxListenersExceededWarning, every call still aborted', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      let listenersDuringRound = -1;
      let started = 0;
      const waits = defineTool({
        name: 'waits',
        description: 'Waits for abort.',
        parameters: z.object({}),
        concurrency: 24,
        execute: (_a, ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
            if (++started === 24) {
              listenersDuringRound = getEventListeners(controller.signal, 'abort').length;
              controller.abort(new Error('rollout stopped'));
            }
          }),
      });
      const runner = new ToolRunner(new ToolSet([waits]), { signal: controller.signal });
      const outcomes = await runner.run(Array.from({ length: 24 }, (_, i) => request('waits', {}, i)));
      assert.equal(listenersDuringRound, 1, 'one listener on the stop signal for the whole round');
      assert.deepEqual(
        new Set(outcomes.map((o) => o.error?.message.split('\n')[0])),
        new Set(['Error: rollout stopped']),
      );
      // A round that finishes normally leaves nothing on the signal either.
      const calm = new AbortController();
      const echo = defineTool({
        name: 'echo',
        description: 'Echoes.',
        parameters: z.object({}),
        concurrency: 24,
        execute: async () => 'ok',
      });
      await new ToolRunner(new ToolSet([echo]), { signal: calm.signal }).run(
        Array.from({ length: 24 }, (_, i) => request('echo', {}, i)),
      );
      assert.equal(getEventListeners(calm.signal, 'abort').length, 0);
      await sleep(10); // warnings are emitted on a later tick
      assert.deepEqual(
        warnings.map((w) => w.name),
        [],
      );
    } finally {
      process.off('warning', onWarning);
    }
  });
});
