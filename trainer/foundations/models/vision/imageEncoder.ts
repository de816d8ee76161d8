import type { Feed } from '../../engine/device/device';
import { Graph } from '../../engine/graph';
import { serializeGraph } from '../../engine/serialize';
import { WeightInputs } from '../decoder';
import type { ModelRuntime } from '../runtime';
import { encoderFeeds, type BatchImage } from './visionBatch';
import { visionEncoder, visionGraphInputs } from './encoder';

/**
 * The vision tower as its own graph, for generation: each distinct image is encoded once (a
 * group's samples share their prompt's image; a tool result's image enters the cache once) and
 * its embeddings [tokens, hidden] are kept by content hash for the rest of the rollout.
 */
export class ImageEncoder {
  private session: { id: number; weights: Record<string, Feed> } | undefined;
  private readonly cache = new Map<string, Float32Array>();
  /** How many images went through the tower (a test checks that repeats are not re-encoded). */
  encoded = 0;

  constructor(private readonly model: ModelRuntime) {}

  /** Embeddings of each image, in order ([tokens · hidden] each). */
  async embed(images: readonly BatchImage[]): Promise<Float32Array[]> {
    const missing = [...new Map(images.filter((im) => !this.cache.has(im.key)).map((im) => [im.key, im])).values()];
    if (missing.length) {
      const vision = this.model.config.vision!;
      if (!this.session) {
        const g = new Graph('vision_encoder');
        const weights = new WeightInputs(g, 'float32');
        g.output(visionEncoder(g, vision, weights, visionGraphInputs(g, vision, 'float32'), 'float32'), 'embeds');
        const id = await this.model.device.load({ model: serializeGraph(g), settings: {} });
        this.session = { id, weights: this.model.weightFeeds(weights) };
      }
      const { feeds, tokenOffsets } = encoderFeeds(missing, vision);
      const out = await this.model.device.run(
        this.session.id,
        { ...feeds, ...this.session.weights },
        { embeds: 'return' },
      );
      const all = out.embeds.data as Float32Array;
      const hidden = this.model.config.hiddenSize;
      missing.forEach((image, i) => {
        const end = i + 1 < missing.length ? tokenOffsets[i + 1] : all.length / hidden;
        this.cache.set(image.key, all.slice(tokenOffsets[i] * hidden, end * hidden));
      });
      this.encoded += missing.length;
    }
    return images.map((im) => this.cache.get(im.key)!);
  }

  async release(): Promise<void> {
    if (this.session) await this.model.device.release(this.session.id);
    this.session = undefined;
  }
}
