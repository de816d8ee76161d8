import type { Graph, Tensor } from '../../engine/graph';
import * as op from '../../engine/ops';
import type { ModelConfig } from '../modelConfig';
import type { ComputeDtype, DecoderInputs, WeightInputs } from '../decoder';
import { IMAGE_FEEDS } from './visionBatch';
import { visionEncoder, visionGraphInputs } from './encoder';

/**
 * The image inputs of a scoring or training graph of a vision-language model: the encoder runs
 * once over every distinct image of the batch, and each segment (the shared prefix, the rows)
 * gathers the output rows its image tokens take (see addVisionFeeds for the feeds).
 */
export function segmentImages(
  g: Graph,
  config: ModelConfig,
  weights: WeightInputs,
  dtype: ComputeDtype,
  sharedPrefix: boolean,
): { rows: DecoderInputs['images']; prefix?: DecoderInputs['images'] } {
  const vision = config.vision!;
  const encoded = visionEncoder(g, vision, weights, visionGraphInputs(g, vision, dtype), dtype); // [U, hidden]
  // Each segment's image token count is its own symbolic size.
  const take = (rowsName: string, slotsName: string, count: string) => {
    const rows: Tensor = g.input(rowsName, 'int64', [count]);
    return { values: op.gather(encoded, rows, 0), slots: g.input(slotsName, 'int64', [count]) };
  };
  return {
    rows: take(IMAGE_FEEDS.rows, IMAGE_FEEDS.slots, 'image_tokens'),
    ...(sharedPrefix ? { prefix: take(IMAGE_FEEDS.prefixRows, IMAGE_FEEDS.prefixSlots, 'prefix_image_tokens') } : {}),
  };
}
