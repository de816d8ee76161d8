/**
 * Tools that cannot hang or kill the trainer. A config's tools run in a tool worker that
 * evaluates the same module (trainer/bridges/usercode/toolHost.ts): a call that never yields times out
 * at its deadline and the next call finds a fresh worker; anything a tool throws is described;
 * what a tool needs from its module — closures over the config's objects, a zod schema that
 * transforms, `instanceof` — works there as on the trainer's thread. A tool kept on the trainer's
 * thread (`isolation: 'trainer'`) that blocks it past its deadline is reported as a timeout, not
 * as a success.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { datasetFromRows } from '#trainer/foundations/data';
import {
  observationImages,
  observationText,
  ToolRunner,
  ToolSet,
  type ToolCallRequest,
  type ToolRunOutcome,
} from '#trainer/foundations/tools';
import type { PlacedTools } from '#trainer/pipeline/training/config/trainingConfig';
import { loadConfig } from '#trainer/bridges/usercode/loadConfig';
import { WorkerTool, type ToolHost } from '#trainer/bridges/usercode/toolHost';
import { PING_GRACE_MS } from '#trainer/bridges/usercode/workerEntry';

const CONFIG = `import { isMainThread } from 'node:worker_threads';
import { defineConfig, defineTool, z } from 'rollout-studio';

// What the tools close over: an object of the config, a class of the module.
const settings = { greeting: 'hello' };
class Shelf { constructor(readonly items: string[]) {} }
const shelf = new Shelf(['a', 'b']);

export const tools = [
  defineTool({ name: 'greet', description: 'Greets.', parameters: z.object({ who: z.string() }), execute: ({ who }) => \`\${settings.greeting} \${who} on \${isMainThread ? 'the trainer thread' : 'a worker'}\` }),
  defineTool({ name: 'host', description: 'A URL\\'s host.', parameters: z.object({ url: z.string().transform((s) => new URL(s)) }), execute: ({ url }) => \`\${url instanceof URL} \${url.host} \${shelf instanceof Shelf} \${shelf.items.length}\` }),
  defineTool({ name: 'spin', description: 'Never yields.', parameters: z.object({}), timeoutMs: 300, execute: () => { for (;;) {} } }),
  defineTool({ name: 'slow', description: 'Takes its time, politely.', parameters: z.object({}), timeoutMs: 5_000, execute: () => new Promise((resolve) => setTimeout(() => resolve('slow done'), 800)) }),
  defineTool({ name: 'bigint', description: 'Throws a BigInt.', parameters: z.object({}), execute: () => { throw 12345678901234567890n; } }),
  defineTool({ name: 'circular', description: 'Throws a circular object.', parameters: z.object({}), execute: () => { const o: Record<string, unknown> = { kind: 'loop' }; o.self = o; throw o; } }),
  defineTool({ name: 'fails', description: 'Throws an Error.', parameters: z.object({}), execute: () => { throw new RangeError('out of range'); } }),
  defineTool({ name: 'function_data', description: 'Returns a function in data.', parameters: z.object({}), execute: () => ({ content: [{ type: 'text', text: 'x' }], data: { f: () => 1 } }) as never }),
  defineTool({ name: 'logs', description: 'Logs.', parameters: z.object({}), execute: (_args, ctx) => { ctx.log.warn(\`row \${ctx.row.id}\`); return 'logged'; } }),
  defineTool({ name: 'picture', description: 'Returns an image.', parameters: z.object({}), execute: () => ({ content: [{ type: 'image', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]) }, { type: 'text', text: 'a picture' }] }) }),
  defineTool({ name: 'here', description: 'Stays on the trainer thread.', parameters: z.object({}), isolation: 'trainer', execute: () => (isMainThread ? 'trainer thread' : 'worker') }),
  defineTool({ name: 'blocks', description: 'Blocks the trainer thread.', parameters: z.object({}), isolation: 'trainer', timeoutMs: 100, execute: () => { const end = Date.now() + 400; while (Date.now() < end) {} return 'too late'; } }),
  defineTool({ name: 'fails_here', description: 'Throws on the trainer thread.', parameters: z.object({}), isolation: 'trainer', execute: () => { throw new RangeError('out of range here'); } }),
  defineTool({ name: 'stray', description: 'Throws from a callback, ending its worker.', parameters: z.object({}), execute: () => new Promise((resolve) => { setTimeout(() => { throw new Error('stray throw'); }, 10); setTimeout(() => resolve('never'), 2_000); }) }),
];

export default defineConfig({
  model: { path: 'model' },
  data: { train: 'train.jsonl' },
  tools,
  rewards: { outcome: [{ name: 'zero', score: () => 0 }] },
  algorithm: { name: 'grpo' },
  steps: 1,
});
`;

/** Frames of the trainer (its folders, the tool worker), of Node, or built-ins without a place that the trainer's awaits add. */
const TRAINER_FRAMES =
  /trainer[\\/](bridges|foundations|pipeline|contract)|toolWorker|node:internal|\(node:|\(index \d+\)|\(<anonymous>\)/;

const row = datasetFromRows('tools', [{ id: 'r7', prompt: 'x' }]).rows[0];

function request(name: string, args: unknown = {}, index = 0): ToolCallRequest {
  return {
    name,
    arguments: args,
    trajectory: { index, rowId: 'r7', group: 0, sample: index, messages: [], calls: [] },
    turn: 0,
    callIndex: 0,
    row,
  };
}

let dir: string;
let placed: PlacedTools;
let runner: ToolRunner;
const logs: string[] = [];

function host(): ToolHost {
  return (placed.tools.find((t) => t instanceof WorkerTool) as unknown as { host: ToolHost }).host;
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tool-faults-'));
  fs.writeFileSync(path.join(dir, 'tools.config.ts'), CONFIG);
  const loaded = await loadConfig(path.join(dir, 'tools.config.ts'));
  placed = await loaded.placeTools!(loaded.config.tools);
  runner = new ToolRunner(new ToolSet(placed.tools), {
    onLog: (line) => logs.push(`${line.tool} ${line.level}: ${line.message}`),
  });
});
after(async () => {
  await placed?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The text the policy would see of a call's result. */
function text(outcome: ToolRunOutcome): string | undefined {
  return outcome.result && observationText(outcome.result);
}

async function one(name: string, args: unknown = {}): Promise<ToolRunOutcome> {
  return (await runner.run([request(name, args)]))[0];
}

describe('tools in the tool worker', { timeout: 120_000 }, () => {
  it('run in a worker, with their closures, transforming schemas and instanceof intact', async () => {
    assert.deepEqual(
      placed.tools.map((t) => (t instanceof WorkerTool ? 'worker' : 'trainer')),
      [
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'worker',
        'trainer',
        'trainer',
        'trainer',
        'worker',
      ],
    );
    assert.equal(text(await one('greet', { who: 'Ada' })), 'hello Ada on a worker');
    const host = await one('host', { url: 'https://example.org/a' });
    assert.equal(text(host), 'true example.org true 2');
    // The recorded arguments are what the trainer's copy of the schema made of them.
    assert.ok(host.arguments && (host.arguments as { url: unknown }).url instanceof URL);
    assert.equal(text(await one('here')), 'trainer thread');
  });

  it('bring back the images a tool returns, bytes intact', async () => {
    const outcome = await one('picture');
    assert.equal(text(outcome), 'a picture');
    const [image] = observationImages(outcome.result!);
    assert.ok(image.data instanceof Uint8Array, 'image bytes arrive as a Uint8Array');
    assert.deepEqual([...(image.data as Uint8Array)], [0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
  });

  it('describe whatever a tool throws: an Error with its stack, a BigInt, a circular object', async () => {
    const fails = await one('fails');
    assert.equal(fails.error?.kind, 'threw');
    assert.match(fails.error!.message, /^RangeError: out of range\n\s+at .*tools\.config\.ts:\d+/);
    // The policy reads this: the tool's own frames, none of the trainer's (its worker, its runner, the awaits it runs them under) or Node's.
    assert.doesNotMatch(fails.error!.message, TRAINER_FRAMES, fails.error!.message);
    assert.deepEqual(await one('bigint').then((o) => o.error), {
      kind: 'threw',
      message: 'thrown value: 12345678901234567890n',
    });
    const circular = await one('circular');
    assert.equal(circular.error?.kind, 'threw');
    assert.match(circular.error!.message, /^thrown value: <ref \*1> \{ kind: 'loop', self: \[Circular \*1\] \}$/);
  });

  it('fail a call whose result cannot leave the worker, saying what to do', async () => {
    const outcome = await one('function_data');
    assert.equal(outcome.error?.kind, 'threw');
    assert.match(
      outcome.error!.message,
      /tool "function_data" returned a result that cannot leave its worker thread .*keep a result's data to plain values/,
    );
    assert.doesNotMatch(outcome.error!.message, TRAINER_FRAMES, outcome.error!.message);
  });

  it("keep the trainer's frames out of what the policy reads when a tool on the trainer thread throws, or a worker dies", async () => {
    const here = await one('fails_here');
    assert.match(here.error!.message, /^RangeError: out of range here\n\s+at .*tools\.config\.ts:\d+/);
    assert.doesNotMatch(here.error!.message, TRAINER_FRAMES, here.error!.message);
    const stray = await one('stray');
    assert.equal(stray.error?.kind, 'threw');
    assert.match(stray.error!.message, /the tool worker of .*tools\.config\.ts failed: Error: stray throw/);
    assert.doesNotMatch(stray.error!.message, TRAINER_FRAMES, stray.error!.message);
    assert.equal(
      text(await one('greet', { who: 'again' })),
      'hello again on a worker',
      'the next call finds a fresh worker',
    );
  });

  it("forward a tool's log lines", async () => {
    assert.equal(text(await one('logs')), 'logged');
    assert.ok(logs.includes('logs warn: row r7'), logs.join('\n'));
  });

  it('time out a call that never yields, stop it, and run the next call in a fresh worker', async () => {
    const started = performance.now();
    const [spin, beside] = await runner.run([request('spin', {}, 0), request('slow', {}, 1)]);
    assert.deepEqual(spin.error, { kind: 'timeout', message: 'spin did not finish within 300 ms' });
    assert.ok(spin.latencyMs < 300 + 500, `the timeout came at its deadline (${spin.latencyMs} ms)`);
    // The call beside it in the same worker is stopped with it, and says why.
    assert.equal(beside.error?.kind, 'threw');
    assert.match(
      beside.error!.message,
      /the tool worker was restarted: a call of "spin" ran past its timeout without yielding/,
    );
    assert.doesNotMatch(
      beside.error!.message,
      /\n\s+at /,
      `a failure of the worker itself is said in words, without stack frames: ${beside.error!.message}`,
    );
    assert.ok(performance.now() - started < 300 + PING_GRACE_MS + 3000);
    const startsBefore = host().starts;
    assert.equal(text(await one('greet', { who: 'again' })), 'hello again on a worker');
    assert.equal(host().starts, startsBefore + 1, 'a fresh worker evaluated the module again');
  });

  it('leave a slow call that still answers alone: it times out, its worker stays', async () => {
    const slowTool = placed.tools.find((t) => t.name === 'slow')!;
    const saved = slowTool.timeoutMs;
    slowTool.timeoutMs = 100;
    try {
      const startsBefore = host().starts;
      assert.deepEqual((await one('slow')).error, { kind: 'timeout', message: 'slow did not finish within 100 ms' });
      await new Promise((resolve) => setTimeout(resolve, PING_GRACE_MS + 200));
      assert.equal(text(await one('greet', { who: 'still' })), 'hello still on a worker');
      assert.equal(host().starts, startsBefore, 'the responsive worker was kept');
    } finally {
      slowTool.timeoutMs = saved;
    }
  });

  it('report a tool on the trainer thread that blocks past its deadline as a timeout, not a success', async () => {
    const blocked = await one('blocks');
    assert.deepEqual(blocked.error, { kind: 'timeout', message: 'blocks did not finish within 100 ms' });
    // It blocked well past its 100 ms deadline. (Not ≥ 400: the tool waits on Date.now(), whole
    // milliseconds, so it can return up to 1 ms before 400 of performance.now() — CI saw that.)
    assert.ok(blocked.latencyMs >= 390, `latency ${blocked.latencyMs} ms`);
    assert.equal(blocked.result, undefined);
  });
});
