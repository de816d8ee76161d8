import type { HostTensor } from '../../engine/runtime/tensors';
import type { PackedBatch } from '../batch';
import type { VisionConfig } from './visionConfig';
import { hasWindowedBlocks, VISION_INPUTS } from './encoder';
import { multimodalPositions } from './ropeIndex';

/**
 * The image side of a packed batch for a vision-language model: every distinct image of the
 * batch once (a group's samples share their prompt's image: it is encoded once), its patches
 * with their grid positions, frame and window ids, and for each image token of the packed rows
 * the encoder output row that replaces its embedding. Positions become the three M-RoPE axes.
 */

/** An image as the batch needs it; `key` identifies equal images (their content hash). */
export interface BatchImage {
  key: string;
  grid: readonly [number, number, number];
  patches: Float32Array;
}

export interface ImageSequence {
  ids: readonly number[];
  /** The images of the sequence's image token runs, in order. */
  images?: readonly BatchImage[];
}

export const IMAGE_FEEDS = {
  rows: 'image_rows',
  slots: 'image_slots',
  prefixRows: 'prefix_image_rows',
  prefixSlots: 'prefix_image_slots',
} as const;

/** The patch-level inputs of the vision encoder for `images` (each encoded once, in this order). */
export function encoderFeeds(
  images: readonly BatchImage[],
  vision: VisionConfig,
): { feeds: Record<string, HostTensor>; tokenOffsets: number[] } {
  const m = vision.spatialMergeSize;
  const width = vision.inChannels * vision.temporalPatchSize * vision.patchSize * vision.patchSize;
  const total = images.reduce((n, im) => n + im.grid[0] * im.grid[1] * im.grid[2], 0);
  const patches = new Float32Array(total * width);
  const positions = new BigInt64Array(total * 2);
  const frames = new BigInt64Array(total);
  const windows = new BigInt64Array(total);
  // Windows of window_size pixels, counted in merged units (the reference's vit_merger_window_size).
  const unitsPerWindow = vision.windowSize ? vision.windowSize / m / vision.patchSize : 1;
  const tokenOffsets: number[] = [];
  let patch = 0;
  let frame = 0;
  let window = 0;
  let tokens = 0;
  for (const image of images) {
    const [t, h, w] = image.grid;
    if (image.patches.length !== t * h * w * width)
      throw new Error(
        `image ${image.key}: ${image.patches.length} patch values for grid ${image.grid.join('×')} × ${width}`,
      );
    patches.set(image.patches, patch * width);
    tokenOffsets.push(tokens);
    tokens += (t * h * w) / (m * m);
    const windowsAcross = Math.ceil(w / m / unitsPerWindow);
    const windowsDown = Math.ceil(h / m / unitsPerWindow);
    for (let f = 0; f < t; f++) {
      // The processor's order: merged unit (row, column), then the m × m patches inside it.
      for (let bh = 0; bh < h / m; bh++) {
        for (let bw = 0; bw < w / m; bw++) {
          const windowId = window + Math.floor(bh / unitsPerWindow) * windowsAcross + Math.floor(bw / unitsPerWindow);
          for (let mh = 0; mh < m; mh++) {
            for (let mw = 0; mw < m; mw++) {
              positions[patch * 2] = BigInt(bh * m + mh);
              positions[patch * 2 + 1] = BigInt(bw * m + mw);
              frames[patch] = BigInt(frame);
              windows[patch] = BigInt(windowId);
              patch++;
            }
          }
        }
      }
      frame++;
      window += windowsDown * windowsAcross;
    }
  }
  const feeds: Record<string, HostTensor> = {
    [VISION_INPUTS.patches]: { dtype: 'float32', shape: [total, width], data: patches },
    [VISION_INPUTS.positions]: { dtype: 'int64', shape: [total, 2], data: positions },
    [VISION_INPUTS.frames]: { dtype: 'int64', shape: [total], data: frames },
  };
  if (hasWindowedBlocks(vision)) feeds[VISION_INPUTS.windows] = { dtype: 'int64', shape: [total], data: windows };
  return { feeds, tokenOffsets };
}

/** Distinct images of the sequences (by key), in order of first appearance. */
export function distinctImages(sequences: readonly ImageSequence[]): {
  images: BatchImage[];
  index: Map<string, number>;
} {
  const index = new Map<string, number>();
  const images: BatchImage[] = [];
  for (const s of sequences) {
    for (const image of s.images ?? []) {
      if (index.has(image.key)) continue;
      index.set(image.key, images.length);
      images.push(image);
    }
  }
  return { images, index };
}

/**
 * How far a shared prefix may reach: to the first image token at which the sequences show
 * different images. Every image's tokens are the same placeholder id, so equal ids alone would
 * let one sequence's picture stand for all of them (the prefix keeps sequence 0's images).
 * Infinity when every image token that the sequences have in common position shows the same image.
 */
export function sameImagesPrefixLimit(sequences: readonly ImageSequence[], vision: VisionConfig): number {
  const m2 = vision.spatialMergeSize ** 2;
  // For each sequence, the key of the image behind each of its image tokens, by position.
  const keysAt = sequences.map((s) => {
    const keys = new Map<number, string>();
    const images = s.images ?? [];
    let image = 0;
    let j = 0;
    for (let t = 0; t < s.ids.length && image < images.length; t++) {
      if (s.ids[t] !== vision.imageTokenId) continue;
      keys.set(t, images[image].key);
      if (++j === (images[image].grid[0] * images[image].grid[1] * images[image].grid[2]) / m2) {
        j = 0;
        image++;
      }
    }
    return keys;
  });
  let limit = Infinity;
  for (const [t, key] of keysAt[0] ?? []) {
    if (keysAt.some((keys) => keys.get(t) !== key)) limit = Math.min(limit, t);
  }
  // An image token in another sequence where sequence 0 has none differs in its id, which ends the shared prefix anyway.
  return limit;
}

function int64(values: readonly number[], shape: number[]): HostTensor {
  return { dtype: 'int64', shape, data: BigInt64Array.from(values, (v) => BigInt(v)) };
}

/**
 * Extends a batch packed by packForScoring / packWithSharedPrefix for a vision-language model:
 * M-RoPE positions [B, T, 3] (and [1, P, 3] for the prefix), the encoder's inputs, and
 * image_rows / image_slots (prefix_image_rows / prefix_image_slots): token slot b·T + t of the
 * packed rows takes encoder output row r.
 */
export function addVisionFeeds(packed: PackedBatch, sequences: readonly ImageSequence[], vision: VisionConfig): void {
  const { images, index } = distinctImages(sequences);
  const encoder = encoderFeeds(images, vision);
  const T = packed.length;
  const P = packed.prefix;
  const B = sequences.length;
  const positions = new BigInt64Array(B * T * 3);
  const rows: number[] = [];
  const slots: number[] = [];
  const prefixRows: number[] = [];
  const prefixSlots: number[] = [];
  let prefixPositions: BigInt64Array | undefined;
  sequences.forEach((s, b) => {
    const seqImages = s.images ?? [];
    const mrope = multimodalPositions(s.ids, seqImages, vision);
    if (mrope.imagesUsed !== seqImages.length)
      throw new Error(`sequence ${b} has ${seqImages.length} image(s) but image tokens for ${mrope.imagesUsed}`);
    for (let t = P; t < s.ids.length; t++)
      for (let a = 0; a < 3; a++) positions[(b * T + t - P) * 3 + a] = BigInt(mrope.positions[t * 3 + a]);
    // Padding continues the text positions (its keys are masked; the values only keep rotary tables finite).
    for (let t = s.ids.length; t < T + P; t++)
      for (let a = 0; a < 3; a++) positions[(b * T + t - P) * 3 + a] = BigInt(mrope.next + t - s.ids.length);
    if (b === 0 && P > 0) prefixPositions = BigInt64Array.from(mrope.positions.subarray(0, P * 3), (v) => BigInt(v));
    // Image tokens: each run of an image's tokens takes that image's rows of the encoder output.
    let image = 0;
    let j = 0;
    const m2 = vision.spatialMergeSize ** 2;
    for (let t = 0; t < s.ids.length; t++) {
      if (s.ids[t] !== vision.imageTokenId) continue;
      const current = seqImages[image];
      const count = (current.grid[0] * current.grid[1] * current.grid[2]) / m2;
      const row = encoder.tokenOffsets[index.get(current.key)!] + j;
      if (t < P) {
        if (b === 0) {
          prefixRows.push(row);
          prefixSlots.push(t);
        }
      } else {
        rows.push(row);
        slots.push(b * T + t - P);
      }
      if (++j === count) {
        j = 0;
        image++;
      }
    }
  });
  Object.assign(packed.feeds, encoder.feeds);
  const feeds = packed.feeds as Record<string, HostTensor>;
  feeds.positions = { dtype: 'int64', shape: [B, T, 3], data: positions };
  feeds[IMAGE_FEEDS.rows] = int64(rows, [rows.length]);
  feeds[IMAGE_FEEDS.slots] = int64(slots, [slots.length]);
  if (P > 0) {
    feeds.prefix_positions = { dtype: 'int64', shape: [1, P, 3], data: prefixPositions! };
    feeds[IMAGE_FEEDS.prefixRows] = int64(prefixRows, [prefixRows.length]);
    feeds[IMAGE_FEEDS.prefixSlots] = int64(prefixSlots, [prefixSlots.length]);
  }
}
