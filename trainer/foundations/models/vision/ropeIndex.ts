import type { VisionConfig } from './visionConfig';

/**
 * Multimodal rotary positions (Qwen2VLModel.get_rope_index, modeling_qwen2_vl.py at
 * huggingface/transformers@00b676f8f0489b88652a31d70751cc540dd06305): text tokens count up
 * with all three positions equal; the tokens of an image (a run of `<|image_pad|>`, one per
 * merged patch) start where the next text token would and add their (temporal, row, column)
 * in the merged grid; the text after an image continues from the largest position used + 1.
 * Images have temporal index 0 in both families (Qwen2.5-VL scales time only for video).
 */

export interface ImageGrid {
  /** Patches along time, height and width before merging (grid_thw). */
  grid: readonly [number, number, number];
}

export interface MultimodalPositions {
  /** Per token: temporal, height, width positions, interleaved [T, 3]. */
  positions: Int32Array;
  /** The position the next text token gets. */
  next: number;
  /** How many images the ids used. */
  imagesUsed: number;
}

/**
 * Positions of `ids`, continuing a sequence whose next text position is `start` (0 for a new
 * one). `images` are the images whose token runs appear in `ids`, in order.
 */
export function multimodalPositions(
  ids: readonly number[],
  images: readonly ImageGrid[],
  vision: Pick<VisionConfig, 'imageTokenId' | 'spatialMergeSize'>,
  start = 0,
): MultimodalPositions {
  const positions = new Int32Array(ids.length * 3);
  let next = start;
  let image = 0;
  let i = 0;
  while (i < ids.length) {
    if (ids[i] !== vision.imageTokenId) {
      positions.fill(next, i * 3, i * 3 + 3);
      next++;
      i++;
      continue;
    }
    const current = images[image];
    if (!current)
      throw new Error(`token ${i} is an image token, but only ${images.length} image(s) were given for these ids`);
    const m = vision.spatialMergeSize;
    const [t, h, w] = [current.grid[0], current.grid[1] / m, current.grid[2] / m];
    const count = t * h * w;
    for (let j = 0; j < count; j++, i++) {
      if (ids[i] !== vision.imageTokenId)
        throw new Error(
          `image ${image} (grid ${current.grid.join('×')}) needs ${count} image tokens from token ${i - j}, but token ${i} is ${ids[i] ?? 'past the end'}`,
        );
      positions[i * 3] = next + Math.floor(j / (h * w));
      positions[i * 3 + 1] = next + (Math.floor(j / w) % h);
      positions[i * 3 + 2] = next + (j % w);
    }
    next += Math.max(t, h, w);
    image++;
  }
  return { positions, next, imagesUsed: image };
}

/** The image token runs of `ids`: where each starts and how long it is. */
export function imageRuns(ids: readonly number[], imageTokenId: number): { start: number; length: number }[] {
  const runs: { start: number; length: number }[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== imageTokenId) continue;
    if (runs.length && runs[runs.length - 1].start + runs[runs.length - 1].length === i) runs[runs.length - 1].length++;
    else runs.push({ start: i, length: 1 });
  }
  return runs;
}
