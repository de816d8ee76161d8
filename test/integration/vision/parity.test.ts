/**
 * The vision-language graphs against the independent float64 reference of the transformers
 * definitions (test/helpers/referenceVision.ts), on tiny random Qwen2-VL and Qwen2.5-VL
 * checkpoints made by create-model: the vision tower alone (Qwen2.5-VL with ragged attention
 * windows), and whole-model log-probs of padded batches whose sequences hold images — plain and
 * with a shared prefix that holds an image — to 1e-4 in float32.
 */
import { after, before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createDevice, type Device } from '#trainer/foundations/engine/device/device';
import { Graph } from '#trainer/foundations/engine/graph';
import { serializeGraph } from '#trainer/foundations/engine/serialize';
import type { HostTensor } from '#trainer/foundations/engine/runtime/tensors';
import { packForScoring, packWithSharedPrefix, type PackedBatch } from '#trainer/foundations/models/batch';
import type { ModelConfig } from '#trainer/foundations/models/modelConfig';
import { packSequences } from '#trainer/pipeline/rl/batching';
import { WeightInputs } from '#trainer/foundations/models/decoder';
import { openModelFolder, type ModelFolder } from '#trainer/foundations/models/modelFolder';
import { readModelWeights } from '#trainer/foundations/models/loadWeights';
import { buildScoringGraph } from '#trainer/foundations/models/scoring';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { addVisionFeeds, encoderFeeds, type ImageSequence } from '#trainer/foundations/models/vision/visionBatch';
import type { VisionLanguageFamily } from '#trainer/foundations/models/vision/visionConfig';
import { visionEncoder, visionGraphInputs } from '#trainer/foundations/models/vision/encoder';
import {
  loadImageProcessorConfig,
  prepareImage,
  type PreparedImage,
} from '#trainer/foundations/models/vision/preprocess';
import { referenceVisionEncoder, referenceVisionLanguageLogProbs, type Weights } from '../../helpers/referenceVision';
import { createTinyVisionModel, QWEN3_TOKENIZER, randomPng } from '../../helpers/visionFixture';

let tokenizer: Tokenizer;
let root: string;
let device: Device;

before(() => {
  tokenizer = Tokenizer.load(QWEN3_TOKENIZER);
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'vision-parity-'));
  device = createDevice('cpu', { worker: false });
});
after(async () => {
  await device.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function setUp(
  family: VisionLanguageFamily,
): Promise<{ folder: ModelFolder; weights: Record<string, HostTensor>; images: PreparedImage[] }> {
  const dir = path.join(root, family);
  if (!fs.existsSync(dir)) createTinyVisionModel(family, dir, tokenizer);
  const folder = openModelFolder(dir, { tokenizer });
  const weights = readModelWeights(folder.checkpoint, folder.config);
  const processor = loadImageProcessorConfig(dir, folder.config.vision!);
  // 40×24 → a 10×6 patch grid, 5×3 merged units: windows of 2×2 units leave ragged ones at the edges.
  const images = [
    await prepareImage(await randomPng(40, 24, 1), processor, 3),
    await prepareImage(await randomPng(16, 16, 2), processor, 3),
  ];
  return { folder, weights, images };
}

const plain = (weights: Record<string, HostTensor>): Weights =>
  Object.fromEntries(Object.entries(weights).map(([k, t]) => [k, t.data as Float32Array]));

function batchImage(image: PreparedImage) {
  return { key: image.sha256, grid: image.grid, patches: image.patches };
}

/** Text, then `<|vision_start|>` + one `<|image_pad|>` per merged patch + `<|vision_end|>`, then more text. */
function withImage(before: string, image: PreparedImage, afterText: string): number[] {
  const pad = tokenizer.tokenId('<|image_pad|>');
  return [
    ...tokenizer.encode(before + '<|vision_start|>'),
    ...new Array(image.tokens).fill(pad),
    ...tokenizer.encode('<|vision_end|>' + afterText),
  ];
}

for (const family of ['qwen2_vl', 'qwen2_5_vl'] as const) {
  describe(`${family} against the float64 reference`, () => {
    it('the vision tower alone matches to 1e-4', async () => {
      const { folder, weights, images } = await setUp(family);
      const vision = folder.config.vision!;
      assert.equal(images[0].tokens, 15);
      const g = new Graph('vision');
      const w = new WeightInputs(g, 'float32');
      g.output(visionEncoder(g, vision, w, visionGraphInputs(g, vision, 'float32'), 'float32'), 'embeds');
      const session = await device.load({ model: serializeGraph(g), settings: {} });
      const { feeds } = encoderFeeds(images.map(batchImage), vision);
      for (const name of w.used.keys()) feeds[name] = weights[name];
      const out = await device.run(session, feeds, { embeds: 'return' });
      const got = out.embeds.data as Float32Array;
      const expected = referenceVisionEncoder(
        vision,
        plain(weights),
        images.map((im) => ({ grid: im.grid, patches: im.patches })),
      );
      assert.deepEqual(out.embeds.shape, [expected.length, folder.config.hiddenSize]);
      let worst = 0;
      let scale = 0;
      expected.forEach((row, r) =>
        row.forEach((x, d) => {
          worst = Math.max(worst, Math.abs(got[r * row.length + d] - x));
          scale = Math.max(scale, Math.abs(x));
        }),
      );
      assert.ok(scale > 0.05, `the embeddings are not trivial (max ${scale})`);
      assert.ok(worst < 1e-4, `vision embeddings differ by ${worst}`);
      await device.release(session);
      folder.close();
    });

    for (const shared of [false, true]) {
      it(`whole-model log-probs of a padded batch with images${shared ? ', sharing a prefix that holds an image' : ''}, to 1e-4`, async () => {
        const { folder, weights, images } = await setUp(family);
        const config = folder.config;
        const sequences: ImageSequence[] = shared
          ? [
              { ids: withImage('Look: ', images[0], ' How many dots? Five.'), images: [batchImage(images[0])] },
              {
                ids: [...withImage('Look: ', images[0], ' And this'), ...withImage(' one: ', images[1], ' three')],
                images: [batchImage(images[0]), batchImage(images[1])],
              },
            ]
          : [
              { ids: withImage('Count the dots in ', images[0], ' please: 7'), images: [batchImage(images[0])] },
              { ids: tokenizer.encode('No image here, just text.'), images: [] },
              {
                ids: [...withImage('Two: ', images[1], ' and'), ...withImage(' ', images[0], '.')],
                images: [batchImage(images[1]), batchImage(images[0])],
              },
            ];
        // Score the text tokens (image tokens are never predicted: the loss never covers them); with a
        // shared prefix, those after the first image (a prefix ends before the first scored token).
        const pad = config.vision!.imageTokenId;
        const firstScored = shared ? sequences[0].ids.indexOf(tokenizer.tokenId('<|vision_end|>')) + 2 : 1;
        const score = sequences.map((s) => Uint8Array.from(s.ids, (id, t) => (t >= firstScored && id !== pad ? 1 : 0)));
        const packed = shared
          ? packWithSharedPrefix(
              sequences.map((s) => s.ids),
              score,
            )
          : packForScoring(
              sequences.map((s) => s.ids),
              score,
            );
        assert.equal(packed.prefix > 0, shared, 'the prefix is shared exactly when asked');
        if (shared) assert.ok(packed.prefix > images[0].tokens, 'the shared prefix holds the first image');
        addVisionFeeds(packed, sequences, config.vision!);
        const { worst, checked } = await compareWithReference(folder.config, weights, sequences, score, packed);
        assert.ok(checked > (shared ? 8 : 20), `only ${checked} tokens compared`);
        assert.ok(worst < 1e-4, `log-probs differ by ${worst}`);
        folder.close();
      });
    }

    it('a batch whose image placeholders are equal but whose pictures differ: the shared prefix stops before them', async () => {
      // Prompts of one template over different pictures of one size have equal token ids: only the
      // images tell them apart. A prefix shared through the image would give every row the first row's picture.
      const { folder, weights } = await setUp(family);
      const config = folder.config;
      const processor = loadImageProcessorConfig(path.join(root, family), config.vision!);
      const pictures = [
        await prepareImage(await randomPng(16, 16, 7), processor, 3),
        await prepareImage(await randomPng(16, 16, 8), processor, 3),
      ];
      const sequences: ImageSequence[] = pictures.map((im) => ({
        ids: withImage('Look: ', im, ' What is it? A cat.'),
        images: [batchImage(im)],
      }));
      assert.deepEqual(sequences[0].ids, sequences[1].ids);
      assert.notEqual(pictures[0].sha256, pictures[1].sha256);
      const firstScored = sequences[0].ids.indexOf(tokenizer.tokenId('<|vision_end|>')) + 2;
      const score = sequences.map((s) => Uint8Array.from(s.ids, (_, t) => (t >= firstScored ? 1 : 0)));
      const packed = packSequences(sequences, score, config.vision!);
      const firstImageToken = sequences[0].ids.indexOf(config.vision!.imageTokenId);
      assert.ok(
        packed.prefix > 0 && packed.prefix <= firstImageToken,
        `shared prefix ${packed.prefix}, first image token ${firstImageToken}`,
      );
      const { worst, checked } = await compareWithReference(config, weights, sequences, score, packed);
      assert.ok(checked >= 10, `only ${checked} tokens compared`);
      assert.ok(worst < 1e-4, `log-probs differ by ${worst}`);
      folder.close();
    });
  });
}

/** The scoring graph's log-probs of the scored tokens of a packed batch against the float64 reference, sequence by sequence. */
async function compareWithReference(
  config: ModelConfig,
  weights: Record<string, HostTensor>,
  sequences: readonly ImageSequence[],
  score: readonly Uint8Array[],
  packed: PackedBatch,
): Promise<{ worst: number; checked: number }> {
  const shared = packed.prefix > 0;
  const scoring = buildScoringGraph(config, { dtype: 'float32', sharedPrefix: shared });
  scoring.graph.output(scoring.logprobs, 'logprobs');
  // Sizes that vary independently have their own symbolic names: onnxruntime plans buffers as if equal names meant equal sizes.
  const dimOf = (input: string) => scoring.graph.inputs.find((t) => t.name === input)!.shape[0];
  const independent = ['score_tokens', 'pixel_patches', 'image_slots', ...(shared ? ['prefix_image_slots'] : [])].map(
    dimOf,
  );
  assert.equal(new Set(independent).size, independent.length, `symbolic sizes ${independent.join(', ')}`);
  const session = await device.load({ model: serializeGraph(scoring.graph), settings: {} });
  const feeds: Record<string, HostTensor> = {
    ...(packed.feeds as Record<string, HostTensor>),
    inv_temperature: { dtype: 'float32', shape: [], data: Float32Array.of(1) },
  };
  for (const name of scoring.weights.used.keys()) feeds[name] = weights[name];
  const out = await device.run(session, feeds, { logprobs: 'return' });
  const logprobs = out.logprobs.data as Float32Array;
  let worst = 0;
  let checked = 0;
  sequences.forEach((s, b) => {
    const ref = referenceVisionLanguageLogProbs(
      config,
      plain(weights),
      s.ids,
      (s.images ?? []).map((im) => ({ grid: [...im.grid] as [number, number, number], patches: im.patches })),
    );
    for (let t = Math.max(1, packed.prefix); t < s.ids.length; t++) {
      if (!score[b][t]) continue;
      worst = Math.max(worst, Math.abs(logprobs[b * packed.length + t - packed.prefix] - ref[t - 1][s.ids[t]]));
      checked++;
    }
  });
  await device.release(session);
  return { worst, checked };
}
