/**
 * Image preprocessing against worked examples of the reference's arithmetic: smart_resize
 * (values computed with transformers' formula in Python, including its round-half-to-even),
 * the patch order, the normalisation, transparency, multimodal positions, and the errors for
 * images that cannot be used.
 */
import { describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import sharp from 'sharp';
import { parseModelConfig } from '#trainer/foundations/models/modelConfig';
import {
  defaultImageProcessor,
  DEFAULT_IMAGE_MEAN,
  DEFAULT_IMAGE_STD,
  ImageError,
  patchify,
  prepareImage,
  roundHalfEven,
  smartResize,
} from '#trainer/foundations/models/vision/preprocess';
import { imageRuns, multimodalPositions } from '#trainer/foundations/models/vision/ropeIndex';
import { referenceRopeIndex } from '../../helpers/referenceVision';

describe('smart_resize', () => {
  // [height, width] → [height, width] with factor 28, min 56·56, max 28·28·1280 (Qwen2-VL's defaults).
  const examples: [number, number, number, number][] = [
    [480, 640, 476, 644],
    [42, 70, 56, 56], // 1.5 → 2 and 2.5 → 2: Python rounds halves to even
    [100, 154, 112, 168], // 5.5 → 6
    [28, 28, 56, 56], // below min_pixels: scaled up
    [30, 60, 56, 84],
    [1080, 1920, 728, 1316], // above max_pixels: scaled down
    [2000, 3000, 812, 1204],
    [224, 224, 224, 224],
  ];
  for (const [h, w, eh, ew] of examples) {
    it(`${h}×${w} → ${eh}×${ew}`, () =>
      assert.deepEqual(smartResize(h, w, 28, 56 * 56, 28 * 28 * 1280), { height: eh, width: ew }));
  }
  it('rounds halves to even, as Python does', () => {
    assert.deepEqual([0.5, 1.5, 2.5, 3.5, 2.4, 2.6].map(roundHalfEven), [0, 2, 2, 4, 2, 3]);
  });
  it('refuses images smaller than the factor or of extreme aspect ratio', () => {
    assert.throws(() => smartResize(20, 300, 28, 3136, 1003520), /both sides must be at least 28/);
    assert.throws(() => smartResize(28, 6000, 28, 3136, 1003520), /aspect ratio 214\.3 is above 200/);
  });
});

describe('patches', () => {
  it('a 4×8 image with 2-pixel patches and merge 2: rows by merged unit, columns channel, time, row, column', () => {
    const h = 4;
    const w = 8;
    const rgb = new Uint8Array(h * w * 3);
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) for (let c = 0; c < 3; c++) rgb[(y * w + x) * 3 + c] = c * 100 + y * w + x;
    const { patches, grid } = patchify(rgb, h, w, {
      patchSize: 2,
      temporalPatchSize: 2,
      mergeSize: 2,
      rescaleFactor: undefined,
      mean: undefined,
      std: undefined,
    });
    assert.deepEqual(grid, [1, 2, 4]);
    const row = (r: number) => Array.from(patches.subarray(r * 24, (r + 1) * 24));
    // Row 2: merged unit (0, 0), its patch (1, 0) → pixels (2..3, 0..1); both time slots hold the same frame.
    assert.deepEqual(
      row(2),
      [16, 17, 24, 25, 16, 17, 24, 25, 116, 117, 124, 125, 116, 117, 124, 125, 216, 217, 224, 225, 216, 217, 224, 225],
    );
    // Row 5: merged unit (0, 1), its patch (0, 1) → pixels (0..1, 6..7).
    assert.deepEqual(row(5).slice(0, 4), [6, 7, 14, 15]);
  });

  it('a solid colour through sharp: resized grid, token count and normalised values', async () => {
    const png = await sharp({ create: { width: 60, height: 30, channels: 3, background: { r: 255, g: 128, b: 0 } } })
      .png()
      .toBuffer();
    const image = await prepareImage(
      png,
      { ...defaultImageProcessor({ patchSize: 14, temporalPatchSize: 2, spatialMergeSize: 2 }) },
      3,
    );
    assert.deepEqual([image.width, image.height, image.format], [60, 30, 'png']);
    assert.deepEqual(image.grid, [1, 4, 6]); // resized to 56 × 84
    assert.equal(image.tokens, 6);
    assert.equal(image.patches.length, 24 * 3 * 2 * 14 * 14);
    const expected = [255, 128, 0].map((v, c) => (v / 255 - DEFAULT_IMAGE_MEAN[c]) / DEFAULT_IMAGE_STD[c]);
    for (let c = 0; c < 3; c++)
      assert.ok(Math.abs(image.patches[c * 2 * 14 * 14 + 5] - expected[c]) < 1e-5, `channel ${c}`);
    assert.match(image.sha256, /^[0-9a-f]{64}$/);
  });

  it('transparency is composited onto white, as convert_to_rgb does', async () => {
    const png = await sharp({
      create: { width: 28, height: 28, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
    })
      .png()
      .toBuffer();
    const image = await prepareImage(
      png,
      { ...defaultImageProcessor({ patchSize: 14, temporalPatchSize: 2, spatialMergeSize: 2 }), minPixels: 28 * 28 },
      3,
    );
    assert.ok(Math.abs(image.patches[0] - (1 - DEFAULT_IMAGE_MEAN[0]) / DEFAULT_IMAGE_STD[0]) < 1e-5);
  });

  it('JPEG and WebP decode too', async () => {
    for (const format of ['jpeg', 'webp'] as const) {
      const blank = sharp({ create: { width: 32, height: 32, channels: 3, background: '#808080' } });
      const bytes = await blank[format]().toBuffer();
      const image = await prepareImage(
        bytes,
        defaultImageProcessor({ patchSize: 16, temporalPatchSize: 2, spatialMergeSize: 2 }),
        3,
      );
      assert.equal(image.format, format);
      assert.deepEqual(image.grid, [1, 4, 4]); // 32×32 scaled up to min_pixels 56·56 → 64×64
    }
  });

  it('errors: bytes that are not an image, an image over the pixel budget', async () => {
    const processor = defaultImageProcessor({ patchSize: 14, temporalPatchSize: 2, spatialMergeSize: 2 });
    await assert.rejects(
      prepareImage(new TextEncoder().encode('not an image'), processor, 3),
      (e: Error) => e instanceof ImageError && /not a readable image.*expected PNG, JPEG or WebP/.test(e.message),
    );
    const big = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    await assert.rejects(
      prepareImage(big, processor, 3, { maxInputPixels: 50_000 }),
      /300×200 = 60000 pixels, more than the budget of 50000 pixels/,
    );
  });
});

describe('multimodal rotary positions', () => {
  const vision = { imageTokenId: 9, spatialMergeSize: 2, visionStartTokenId: 8 };
  const config = { vision } as never;
  it('text counts up; an image takes (0, row, column) from where it starts; text resumes after its largest position', () => {
    // two text tokens, <vision_start>, a 1×4×6 grid (2×3 merged: 6 tokens), <vision_end>, two text tokens
    const ids = [1, 2, 8, 9, 9, 9, 9, 9, 9, 3, 4, 5];
    const { positions, next } = multimodalPositions(ids, [{ grid: [1, 4, 6] }], vision);
    const axis = (a: number) => Array.from({ length: ids.length }, (_, t) => positions[t * 3 + a]);
    assert.deepEqual(axis(0), [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8]);
    assert.deepEqual(axis(1), [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8]);
    assert.deepEqual(axis(2), [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8]);
    assert.equal(next, 9);
    assert.deepEqual(referenceRopeIndex(config, ids, [[1, 4, 6]]), [axis(0), axis(1), axis(2)]);
  });
  it('continues a sequence from its next position, and finds the image runs', () => {
    const ids = [8, 9, 9, 9, 9, 3];
    const { positions, next } = multimodalPositions(ids, [{ grid: [1, 4, 4] }], vision, 10);
    assert.deepEqual(Array.from(positions.subarray(0, 6)), [10, 10, 10, 11, 11, 11]);
    assert.equal(next, 14);
    assert.deepEqual(imageRuns(ids, 9), [{ start: 1, length: 4 }]);
    assert.throws(() => multimodalPositions([8, 9, 9, 3], [{ grid: [1, 4, 4] }], vision), /needs 4 image tokens/);
    assert.throws(() => multimodalPositions([8, 9], [], vision), /only 0 image\(s\) were given/);
  });
});

describe('vision-language config.json', () => {
  const released = {
    architectures: ['Qwen2VLForConditionalGeneration'],
    model_type: 'qwen2_vl',
    vocab_size: 151936,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rope_theta: 1000000,
    rms_norm_eps: 1e-6,
    rope_scaling: { type: 'mrope', mrope_section: [2, 3, 3] },
    vision_config: {
      depth: 2,
      embed_dim: 32,
      hidden_size: 64,
      mlp_ratio: 4,
      num_heads: 4,
      in_chans: 3,
      patch_size: 14,
      spatial_merge_size: 2,
      temporal_patch_size: 2,
    },
  };
  it('reads the released layout (text fields at the top) and the text_config layout alike', () => {
    const a = parseModelConfig(released, 'a/config.json');
    const { vision_config, architectures, model_type, ...text } = released;
    const b = parseModelConfig(
      {
        architectures,
        model_type,
        vision_config,
        text_config: {
          ...text,
          rope_scaling: undefined,
          rope_parameters: { rope_type: 'default', mrope_section: [2, 3, 3], rope_theta: 1000000 },
        },
      },
      'b/config.json',
    );
    for (const c of [a, b]) {
      assert.equal(c.family, 'qwen2_vl');
      assert.equal(c.headDim, 16);
      assert.deepEqual(c.mropeSection, [2, 3, 3]);
      assert.equal(c.qkvBias, true);
      assert.equal(c.vision!.mlpSize, 128);
      assert.equal(c.vision!.norm, 'layernorm');
      assert.equal(c.vision!.imageTokenId, 151655);
    }
  });
  it('errors name the field', () => {
    assert.throws(
      () => parseModelConfig({ ...released, rope_scaling: null }, 'c/config.json'),
      /c\/config\.json: \(top level\): rope_scaling with mrope_section is required/,
    );
    assert.throws(
      () =>
        parseModelConfig({ ...released, rope_scaling: { type: 'mrope', mrope_section: [2, 2, 2] } }, 'c/config.json'),
      /mrope_section \[2,2,2\] must add up to head_dim \/ 2 = 8/,
    );
    assert.throws(
      () =>
        parseModelConfig(
          { ...released, vision_config: { ...released.vision_config, hidden_size: 48 } },
          'c/config.json',
        ),
      /vision_config\.hidden_size \(48\) must equal the language model's hidden_size \(64\)/,
    );
    assert.throws(
      () =>
        parseModelConfig(
          { ...released, vision_config: { ...released.vision_config, hidden_act: 'relu6' } },
          'c/config.json',
        ),
      /hidden_act is "relu6".*supported: "quick_gelu", "silu", "gelu"/,
    );
  });
});
