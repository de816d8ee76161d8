import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TurnImage } from '../../foundations/models/generation/policy';
import type { ModelFolder } from '../../foundations/models/modelFolder';
import type { VisionConfig } from '../../foundations/models/vision/visionConfig';
import {
  ImageError,
  prepareImage,
  type ImageProcessorConfig,
  type PreparedImage,
} from '../../foundations/models/vision/preprocess';
import { contentImages, type ChatImagePart, type ChatMessage } from '../../contract/protocol/chatMessages';
import { describeRow, type DatasetRow } from '../../foundations/data/row';
import { definedFields } from '../../contract/definedFields';

/**
 * The images of a rollout: a dataset row's image parts (a file path relative to the dataset, or
 * base64 bytes) and the images tools return, each prepared for the model once (by content hash)
 * — and the errors when one cannot be used, naming the row and message part, or the tool call,
 * and the file. A text-only model gets an error for any image instead of silently losing it.
 */
export interface RolloutImageOptions {
  /** The model's vision tower and image processor; undefined for a text-only model. */
  vision?: { config: VisionConfig; processor: ImageProcessorConfig; architecture: string };
  /** The text-only model's architecture, for the error that says it cannot see images. */
  architecture: string;
  /** Refuse images whose width × height exceeds this (the length budget's `maxImagePixels`). */
  maxImagePixels?: number;
}

/** How a model's folder reads images: its vision tower and image processor, if it has one. */
export function modelImages(folder: ModelFolder, maxImagePixels?: number): RolloutImages {
  const { config, imageProcessor } = folder;
  return new RolloutImages(
    definedFields({
      architecture: config.architecture,
      vision:
        config.vision && imageProcessor
          ? { config: config.vision, processor: imageProcessor, architecture: config.architecture }
          : undefined,
      maxImagePixels,
    }),
  );
}

/** The image placeholder the Qwen2-VL family's templates write once per image, before expansion. */
export const IMAGE_PLACEHOLDER = '<|image_pad|>';

export class RolloutImages {
  private readonly byHash = new Map<string, PreparedImage>();
  private readonly byRow = new Map<DatasetRow, PreparedImage[]>();

  constructor(private readonly options: RolloutImageOptions) {}

  get enabled(): boolean {
    return this.options.vision !== undefined;
  }

  /** The placeholder token each image stands for once before expansion (`<|image_pad|>`). */
  get imageTokenId(): number | undefined {
    return this.options.vision?.config.imageTokenId;
  }

  /** Prepares encoded image bytes; `where` starts every error message. */
  async prepare(bytes: Uint8Array, where: string): Promise<PreparedImage> {
    const vision = this.options.vision;
    if (!vision)
      throw new ImageError(
        `${where}: an image, but ${this.options.architecture} is a text-only model; use a vision-language model (Qwen2-VL, Qwen2.5-VL) or leave images out`,
      );
    // The same bytes again (an agent re-sends its history's images with every request): prepared once.
    const seen = this.byHash.get(crypto.createHash('sha256').update(bytes).digest('hex'));
    if (seen) return seen;
    try {
      const image = await prepareImage(
        bytes,
        vision.processor,
        vision.config.inChannels,
        definedFields({ maxInputPixels: this.options.maxImagePixels }),
      );
      const known = this.byHash.get(image.sha256);
      if (known) return known;
      this.byHash.set(image.sha256, image);
      return image;
    } catch (error) {
      if (error instanceof ImageError) throw new ImageError(`${where}: ${error.message}`);
      throw error;
    }
  }

  /** Every image part of the row's messages, prepared, in the order the template renders them (cached per row). */
  async rowImages(row: DatasetRow): Promise<PreparedImage[]> {
    const cached = this.byRow.get(row);
    if (cached) return cached;
    const images: PreparedImage[] = [];
    for (const [m, message] of row.messages.entries()) {
      if (message.role === 'assistant') continue;
      const parts = contentImages(message.content);
      let k = 0;
      for (const [p, part] of (typeof message.content === 'string' ? [] : message.content).entries()) {
        if (part.type !== 'image') continue;
        const where = `${describeRow(row)}: messages.${m}.content.${p}`;
        images.push(await this.prepare(readImagePart(parts[k++], row, where), where));
      }
    }
    this.byRow.set(row, images);
    return images;
  }

  /** The images prepared for a row by `rowImages`, or undefined when it has not been prepared. */
  preparedFor(row: DatasetRow): PreparedImage[] | undefined {
    return this.byRow.get(row);
  }
}

/** The bytes an image part names: a file (relative to the dataset file) or base64 (a data: URI too). */
function readImagePart(part: ChatImagePart, row: DatasetRow, where: string): Uint8Array {
  if (part.path !== undefined) {
    const file = path.resolve(path.dirname(row.source.file), part.path);
    try {
      return new Uint8Array(fs.readFileSync(file));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new ImageError(
        `${where}: the image file ${file} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${(error as Error).message})`}`,
      );
    }
  }
  if (part.base64 !== undefined) return decodeBase64(part.base64, where);
  throw new ImageError(
    `${where}: an image part needs "path" (a file relative to the dataset) or "base64" (the encoded bytes)`,
  );
}

export function decodeBase64(text: string, where: string): Uint8Array {
  const body = text.startsWith('data:') ? text.slice(text.indexOf(',') + 1) : text;
  // The padding and the whitespace after it in one optional group: `[…\s]*={0,2}\s*` lets two
  // quantifiers share a run of whitespace, quadratic on a long one.
  if (!/^[A-Za-z0-9+/\s]*(?:={1,2}\s*)?$/.test(body))
    throw new ImageError(`${where}: the image's base64 is not valid base64`);
  return new Uint8Array(Buffer.from(body, 'base64'));
}

/** Whether any message holds an image part. */
export function hasImages(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => m.role !== 'assistant' && contentImages(m.content).length > 0);
}

/**
 * Expands each image placeholder token into one per merged patch of its image, as the
 * processor expands `<|image_pad|>` before tokenising (processing_qwen2_vl.py).
 */
export function expandImageTokens(
  ids: readonly number[],
  images: readonly PreparedImage[],
  imageTokenId: number,
  where: string,
): number[] {
  const out: number[] = [];
  let k = 0;
  for (const id of ids) {
    if (id !== imageTokenId) {
      out.push(id);
      continue;
    }
    const image = images[k++];
    if (!image) break;
    for (let i = 0; i < image.tokens; i++) out.push(id);
  }
  const placeholders = ids.filter((id) => id === imageTokenId).length;
  if (placeholders !== images.length) {
    throw new ImageError(
      `${where}: the chat template rendered ${placeholders} image placeholder(s) for ${images.length} image(s); it must render each image part as <|vision_start|><|image_pad|><|vision_end|> (a vision-language template)`,
    );
  }
  return out;
}

/** The same expansion on rendered text (for the prompt's turn boundaries). */
export function expandImageText(text: string, images: readonly PreparedImage[], placeholder: string): string {
  let k = 0;
  return text
    .split(placeholder)
    .reduce((out, piece, i) => (i === 0 ? piece : out + placeholder.repeat(images[k++]?.tokens ?? 1) + piece), '');
}

/** An image as the policy's session takes it with the tokens that stand for it. */
export function policyImage(image: PreparedImage): TurnImage {
  return { key: image.sha256, grid: image.grid, patches: image.patches };
}

/** Where each image's run of placeholder tokens starts in `ids`, searching from `start` (each spans image.tokens). */
export function imageTokenStarts(
  ids: readonly number[],
  start: number,
  images: readonly PreparedImage[],
  imageTokenId: number | undefined,
): number[] {
  const starts: number[] = [];
  for (let t = start; t < ids.length && starts.length < images.length; t++) {
    if (ids[t] !== imageTokenId) continue;
    starts.push(t);
    t += images[starts.length - 1].tokens - 1;
  }
  return starts;
}
