/**
 * Generation by a vision-language model with a KV cache: a prompt with an image, then a second
 * turn that appends a tool result holding another image. The log-probs generation reports
 * equal those the training graph recomputes on the same tokens and images (M-RoPE positions
 * continue across turns; the image embeddings replace their tokens in the cache), each distinct
 * image goes through the vision tower once, and a text-only model refuses an image.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import { createModel } from '#trainer/foundations/models/createModel';
import { GenerationSession, ModelPolicy } from '#trainer/foundations/models/generation/generationSession';
import { ModelRuntime } from '#trainer/foundations/models/runtime';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { prepareImage, type PreparedImage } from '#trainer/foundations/models/vision/preprocess';
import { packSequences } from '#trainer/pipeline/rl/batching';
import type { TurnOptions } from '#trainer/foundations/models/generation/policy';
import { createTinyVisionModel, QWEN3_TOKENIZER, randomPng } from '../../helpers/visionFixture';

let root: string;
let device: Device;
let tokenizer: Tokenizer;

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'vision-generation-'));
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  device = createDevice('cpu', { worker: false });
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

const options: TurnOptions = { temperature: 0.9, topK: 0, topP: 1, maxNewTokens: 6, stopTokenIds: [] };

function imageTokens(image: PreparedImage): number[] {
  return [
    tokenizer.tokenId('<|vision_start|>'),
    ...new Array(image.tokens).fill(tokenizer.tokenId('<|image_pad|>')),
    tokenizer.tokenId('<|vision_end|>'),
  ];
}

function batchImage(image: PreparedImage) {
  return { key: image.sha256, grid: image.grid, patches: image.patches };
}

for (const family of ['qwen2_vl', 'qwen2_5_vl'] as const) {
  describe(`${family} generation`, () => {
    it('reports the log-probs the training graph recomputes, over two turns with an image each', async () => {
      const dir = path.join(root, family);
      createTinyVisionModel(family, dir, tokenizer);
      const model = await ModelRuntime.load(device, dir);
      try {
        const processor = model.folder.imageProcessor!;
        const first = await prepareImage(await randomPng(40, 24, 5), processor, 3);
        const second = await prepareImage(await randomPng(16, 24, 6), processor, 3);
        const policy = new ModelPolicy(model, { captureDistributions: true });
        const session = (await policy.startSession(2, 7)) as GenerationSession;
        const prompt = [
          ...tokenizer.encode('<|im_start|>user\nLook '),
          ...imageTokens(first),
          ...tokenizer.encode(' what is it?<|im_end|>\n<|im_start|>assistant\n'),
        ];
        const turn1 = await session.generate(
          [0, 1].map((sequence) => ({ sequence, append: prompt, images: [batchImage(first)] })),
          options,
        );
        const toolResult = [
          ...tokenizer.encode('<|im_end|>\n<|im_start|>user\n<tool_response>\n'),
          ...imageTokens(second),
          ...tokenizer.encode('\n</tool_response><|im_end|>\n<|im_start|>assistant\n'),
        ];
        const turn2 = await session.generate(
          [{ sequence: 1, append: toolResult, images: [batchImage(second)] }],
          options,
        );
        // The prompt image is encoded once for both rows, the tool's image once more.
        assert.equal(session.images!.encoded, 2);
        // The policy never writes an image placeholder: its log-probability is masked to nothing.
        const vocab = model.config.vocabSize;
        for (const distribution of session.distributions)
          for (let b = 0; b < 2; b++) assert.ok(distribution[b * vocab + model.config.vision!.imageTokenId] < -1e8);
        await session.close();

        // Sequence 1 as the trajectory holds it: the last sampled token of turn 1 entered the cache with turn 2's chunk.
        const seq0 = [...prompt, ...turn1[0].tokens];
        const seq1 = [...prompt, ...turn1[1].tokens, ...toolResult, ...turn2[0].tokens];
        const generated = [
          { from: prompt.length, logprobs: turn1[0].logprobs },
          {
            from: prompt.length,
            logprobs: turn1[1].logprobs,
            then: { from: prompt.length + turn1[1].tokens.length + toolResult.length, logprobs: turn2[0].logprobs },
          },
        ];
        const sequences = [
          { ids: seq0, images: [batchImage(first)] },
          { ids: seq1, images: [batchImage(first), batchImage(second)] },
        ];
        const marks = [
          Uint8Array.from(seq0, (_, t) => (t >= prompt.length ? 1 : 0)),
          Uint8Array.from(seq1, (_, t) =>
            t >= prompt.length && (t < prompt.length + turn1[1].tokens.length || t >= generated[1].then!.from) ? 1 : 0,
          ),
        ];
        const packed = packSequences(sequences, marks, model.config.vision);
        const scoring = buildScoringGraph(model.config, { dtype: 'float32', sharedPrefix: packed.prefix > 0 });
        scoring.graph.output(scoring.logprobs, 'logprobs');
        const id = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
        const out = await device.run(
          id,
          {
            ...packed.feeds,
            ...model.weightFeeds(scoring.weights),
            inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1 / 0.9) },
          },
          { logprobs: 'return' },
        );
        await device.release(id);
        const scored = out.logprobs.data as Float32Array;
        const at = (b: number, t: number) => scored[b * packed.length + t - packed.prefix];
        let worst = 0;
        let compared = 0;
        const compare = (b: number, from: number, logprobs: number[]) =>
          logprobs.forEach((lp, i) => {
            worst = Math.max(worst, Math.abs(at(b, from + i) - lp));
            compared++;
          });
        compare(0, generated[0].from, generated[0].logprobs);
        compare(1, generated[1].from, generated[1].logprobs);
        compare(1, generated[1].then!.from, generated[1].then!.logprobs);
        assert.equal(compared, 18);
        assert.ok(worst < 1e-4, `generation and training disagree by ${worst}`);
      } finally {
        model.close();
      }
    });
  });
}

describe('a text-only model', () => {
  it('refuses a request that carries an image, naming the sequence', async () => {
    const dir = path.join(root, 'text');
    createModel({
      family: 'qwen2',
      layers: 1,
      hidden: 16,
      heads: 2,
      kvHeads: 1,
      intermediate: 16,
      tokenizer,
      outDir: dir,
      seed: 1,
    });
    const model = await ModelRuntime.load(device, dir);
    try {
      const session = await new ModelPolicy(model).startSession(1, 1);
      const image = { key: 'k', grid: [1, 2, 2] as const, patches: new Float32Array(4 * 96) };
      await assert.rejects(
        session.generate([{ sequence: 0, append: [1, 2, 3], images: [image] }], options),
        /sequence 0: the request has 1 image\(s\), but Qwen2ForCausalLM is a text-only model/,
      );
      await session.close();
    } finally {
      model.close();
    }
  });
});
