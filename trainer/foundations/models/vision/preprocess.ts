import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { ModelConfigError } from '../modelErrors';
import { readJsonFile } from '../files/jsonFile';
import type { VisionConfig } from './visionConfig';

/**
 * Images as Qwen2-VL's image processor prepares them (image_processing_qwen2_vl.py at
 * huggingface/transformers@cb0fc56f3caccab77d00d44051a67d4b0980cbd2): RGB on white, `smart_resize`
 * to multiples of patch_size × merge_size within [min_pixels, max_pixels], rescaled and
 * normalised, then cut into temporal × patch × patch patches with each merge group contiguous.
 * The grid, the token count and every step after the resize are exactly the reference's; the
 * resized pixels may differ by a few 8-bit levels (sharp is not PIL: vision/README.md says why).
 */

export const DEFAULT_IMAGE_MEAN = [0.48145466, 0.4578275, 0.40821073];
export const DEFAULT_IMAGE_STD = [0.26862954, 0.26130258, 0.27577711];

const PreprocessorJson = z.looseObject({
  image_processor_type: z.string().optional(),
  do_resize: z.boolean().optional(),
  do_rescale: z.boolean().optional(),
  rescale_factor: z.number().positive().optional(),
  do_normalize: z.boolean().optional(),
  do_convert_rgb: z.boolean().optional(),
  image_mean: z.union([z.number(), z.array(z.number())]).optional(),
  image_std: z.union([z.number().positive(), z.array(z.number().positive())]).optional(),
  min_pixels: z.number().int().positive().nullable().optional(),
  max_pixels: z.number().int().positive().nullable().optional(),
  size: z
    .looseObject({
      shortest_edge: z.number().int().positive().optional(),
      longest_edge: z.number().int().positive().optional(),
    })
    .nullable()
    .optional(),
  patch_size: z.number().int().positive().optional(),
  temporal_patch_size: z.number().int().positive().optional(),
  merge_size: z.number().int().positive().optional(),
  resample: z.number().int().optional(),
});

export interface ImageProcessorConfig {
  minPixels: number;
  maxPixels: number;
  patchSize: number;
  temporalPatchSize: number;
  mergeSize: number;
  doResize: boolean;
  /** Multiply 8-bit values by this before normalising (1/255). */
  rescaleFactor: number | undefined;
  /** Per channel; undefined: no normalisation. */
  mean: number[] | undefined;
  std: number[] | undefined;
  /** Where it was read from (for error messages), or "defaults". */
  source: string;
}

/** The image processor's defaults (Qwen2VLImageProcessor.__init__), with the vision tower's patch sizes. */
export function defaultImageProcessor(
  vision: Pick<VisionConfig, 'patchSize' | 'temporalPatchSize' | 'spatialMergeSize'>,
): ImageProcessorConfig {
  return {
    minPixels: 56 * 56,
    maxPixels: 28 * 28 * 1280,
    patchSize: vision.patchSize,
    temporalPatchSize: vision.temporalPatchSize,
    mergeSize: vision.spatialMergeSize,
    doResize: true,
    rescaleFactor: 1 / 255,
    mean: [...DEFAULT_IMAGE_MEAN],
    std: [...DEFAULT_IMAGE_STD],
    source: 'defaults',
  };
}

/** `<dir>/preprocessor_config.json` (the image processor's defaults when absent), checked against the vision tower. */
export function loadImageProcessorConfig(dir: string, vision: VisionConfig): ImageProcessorConfig {
  const file = path.join(dir, 'preprocessor_config.json');
  if (!fs.existsSync(file)) return defaultImageProcessor(vision);
  const json = readJsonFile(file, PreprocessorJson, (m) => new ModelConfigError(m));
  const defaults = defaultImageProcessor(vision);
  const channels = (value: number | number[] | undefined, fallback: number[], field: string): number[] => {
    if (value === undefined) return fallback;
    const list = typeof value === 'number' ? new Array(vision.inChannels).fill(value) : value;
    if (list.length !== vision.inChannels)
      throw new ModelConfigError(
        `${file}: ${field} has ${list.length} values; the vision tower takes ${vision.inChannels} channels`,
      );
    return list;
  };
  const config: ImageProcessorConfig = {
    // `min_pixels`/`max_pixels` override `size` in transformers (backward compatibility).
    minPixels: json.min_pixels ?? json.size?.shortest_edge ?? defaults.minPixels,
    maxPixels: json.max_pixels ?? json.size?.longest_edge ?? defaults.maxPixels,
    patchSize: json.patch_size ?? defaults.patchSize,
    temporalPatchSize: json.temporal_patch_size ?? defaults.temporalPatchSize,
    mergeSize: json.merge_size ?? defaults.mergeSize,
    doResize: json.do_resize ?? true,
    rescaleFactor: json.do_rescale === false ? undefined : (json.rescale_factor ?? 1 / 255),
    mean: json.do_normalize === false ? undefined : channels(json.image_mean, defaults.mean!, 'image_mean'),
    std: json.do_normalize === false ? undefined : channels(json.image_std, defaults.std!, 'image_std'),
    source: file,
  };
  const mismatch = (field: string, here: number, tower: string, there: number) => {
    if (here !== there)
      throw new ModelConfigError(
        `${file}: ${field} is ${here} but config.json's vision_config.${tower} is ${there}; they must agree`,
      );
  };
  mismatch('patch_size', config.patchSize, 'patch_size', vision.patchSize);
  mismatch('temporal_patch_size', config.temporalPatchSize, 'temporal_patch_size', vision.temporalPatchSize);
  mismatch('merge_size', config.mergeSize, 'spatial_merge_size', vision.spatialMergeSize);
  if (config.minPixels > config.maxPixels)
    throw new ModelConfigError(`${file}: min_pixels ${config.minPixels} is larger than max_pixels ${config.maxPixels}`);
  return config;
}

/** preprocessor_config.json as transformers writes it for these models. */
export function imageProcessorJson(config: ImageProcessorConfig, processorClass: string): Record<string, unknown> {
  return {
    do_convert_rgb: true,
    do_normalize: config.mean !== undefined,
    do_rescale: config.rescaleFactor !== undefined,
    do_resize: config.doResize,
    image_mean: config.mean ?? DEFAULT_IMAGE_MEAN,
    image_processor_type: 'Qwen2VLImageProcessor',
    image_std: config.std ?? DEFAULT_IMAGE_STD,
    max_pixels: config.maxPixels,
    merge_size: config.mergeSize,
    min_pixels: config.minPixels,
    patch_size: config.patchSize,
    processor_class: processorClass,
    resample: 3,
    rescale_factor: config.rescaleFactor ?? 1 / 255,
    size: { longest_edge: config.maxPixels, shortest_edge: config.minPixels },
    temporal_patch_size: config.temporalPatchSize,
  };
}

/** An image that cannot be used, with what was expected; the caller adds which row, call or file it came from. */
export class ImageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageError';
  }
}

/** Python's round(): to the nearest integer, halves to the even one (transformers rounds with it). */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** `smart_resize` of the reference: the (height, width) an image is resized to. */
export function smartResize(
  height: number,
  width: number,
  factor: number,
  minPixels: number,
  maxPixels: number,
): { height: number; width: number } {
  if (height < factor || width < factor)
    throw new ImageError(
      `the image is ${width}×${height} pixels; both sides must be at least ${factor} (patch size × merge size)`,
    );
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new ImageError(
      `the image is ${width}×${height} pixels; its aspect ratio ${(Math.max(height, width) / Math.min(height, width)).toFixed(1)} is above 200`,
    );
  }
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.floor(height / beta / factor) * factor;
    w = Math.floor(width / beta / factor) * factor;
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return { height: h, width: w };
}

export type ImageFormat = 'png' | 'jpeg' | 'webp';

/** An image ready for the model: its patches and grid, and its identity for the run store. */
export interface PreparedImage {
  /** sha256 of the encoded bytes: the image's identity (the run store keeps it as images/<sha256>.<format>). */
  sha256: string;
  format: ImageFormat;
  /** The encoded bytes as given (PNG, JPEG or WebP). */
  bytes: Uint8Array;
  /** The decoded size. */
  width: number;
  height: number;
  /** Patches along time, height and width (grid_thw); the image takes t·h·w / merge² tokens. */
  grid: [number, number, number];
  /** [t·h·w, channels · temporal_patch_size · patch_size²], row-major. */
  patches: Float32Array;
  /** How many `<|image_pad|>` tokens stand for it in the sequence. */
  tokens: number;
}

export interface PrepareOptions {
  /** Refuse images whose decoded width × height exceeds this (checked before decoding). */
  maxInputPixels?: number;
}

/** Decodes, resizes, normalises and patchifies one image. */
export async function prepareImage(
  bytes: Uint8Array,
  processor: ImageProcessorConfig,
  inChannels: number,
  options: PrepareOptions = {},
): Promise<PreparedImage> {
  const sharp = (await import('sharp')).default;
  let metadata;
  try {
    metadata = await sharp(bytes).metadata();
  } catch (error) {
    throw new ImageError(`not a readable image (${(error as Error).message}); expected PNG, JPEG or WebP bytes`);
  }
  const format: string | undefined = metadata.format;
  if (format !== 'png' && format !== 'jpeg' && format !== 'webp')
    throw new ImageError(`the image is ${metadata.format ?? 'of an unknown format'}; expected PNG, JPEG or WebP`);
  const width = metadata.width ?? 0;
  const height = metadata.height ?? 0;
  if (options.maxInputPixels !== undefined && width * height > options.maxInputPixels) {
    throw new ImageError(
      `the image is ${width}×${height} = ${width * height} pixels, more than the budget of ${options.maxInputPixels} pixels (budget.maxImagePixels)`,
    );
  }
  if (inChannels !== 3)
    throw new ImageError(`the vision tower takes ${inChannels} channels; only RGB (3) is supported`);
  const factor = processor.patchSize * processor.mergeSize;
  const target = processor.doResize
    ? smartResize(height, width, factor, processor.minPixels, processor.maxPixels)
    : { height, width };
  if (target.height % factor !== 0 || target.width % factor !== 0) {
    throw new ImageError(
      `the image is ${width}×${height} pixels and do_resize is false; both sides must be multiples of ${factor}`,
    );
  }
  let pipeline = sharp(bytes, { limitInputPixels: options.maxInputPixels ?? 268402689 })
    .flatten({ background: { r: 255, g: 255, b: 255 } })
    .toColourspace('srgb');
  if (target.width !== width || target.height !== height)
    pipeline = pipeline.resize(target.width, target.height, { fit: 'fill', kernel: 'cubic', fastShrinkOnLoad: false });
  let raw;
  try {
    raw = await pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  } catch (error) {
    throw new ImageError(`the image cannot be decoded (${(error as Error).message})`);
  }
  if (raw.info.channels !== 3 || raw.info.width !== target.width || raw.info.height !== target.height) {
    throw new ImageError(
      `decoding gave ${raw.info.width}×${raw.info.height}×${raw.info.channels}, expected ${target.width}×${target.height}×3`,
    );
  }
  const { patches, grid } = patchify(raw.data, target.height, target.width, processor);
  return {
    sha256: crypto.createHash('sha256').update(bytes).digest('hex'),
    format,
    bytes,
    width,
    height,
    grid,
    patches,
    tokens: (grid[0] * grid[1] * grid[2]) / processor.mergeSize ** 2,
  };
}

/**
 * Normalised patches of an interleaved 8-bit RGB image [height, width, 3], in the reference's
 * order: rows (t, h/m, w/m, m, m), columns (channel, temporal, patch row, patch column).
 */
export function patchify(
  rgb: Uint8Array,
  height: number,
  width: number,
  processor: Pick<
    ImageProcessorConfig,
    'patchSize' | 'temporalPatchSize' | 'mergeSize' | 'rescaleFactor' | 'mean' | 'std'
  >,
): { patches: Float32Array; grid: [number, number, number] } {
  const { patchSize: P, temporalPatchSize: T, mergeSize: M } = processor;
  const C = 3;
  const gh = height / P;
  const gw = width / P;
  if (!Number.isInteger(gh / M) || !Number.isInteger(gw / M))
    throw new ImageError(`${width}×${height} is not a multiple of ${P * M} on both sides`);
  const value = new Float32Array(C * height * width); // channel-first, normalised
  for (let c = 0; c < C; c++) {
    const mean = processor.mean?.[c] ?? 0;
    const std = processor.std?.[c] ?? 1;
    for (let i = 0; i < height * width; i++) {
      const v = rgb[i * C + c] * (processor.rescaleFactor ?? 1);
      value[c * height * width + i] = processor.mean ? (v - mean) / std : v;
    }
  }
  const row = C * T * P * P;
  const patches = new Float32Array(gh * gw * row);
  let r = 0;
  for (let bh = 0; bh < gh / M; bh++) {
    for (let bw = 0; bw < gw / M; bw++) {
      for (let mh = 0; mh < M; mh++) {
        for (let mw = 0; mw < M; mw++) {
          const y0 = (bh * M + mh) * P;
          const x0 = (bw * M + mw) * P;
          let k = r * row;
          for (let c = 0; c < C; c++) {
            // A still image fills every temporal slot with the same frame.
            for (let t = 0; t < T; t++) {
              for (let y = 0; y < P; y++) {
                const src = c * height * width + (y0 + y) * width + x0;
                for (let x = 0; x < P; x++) patches[k++] = value[src + x];
              }
            }
          }
          r++;
        }
      }
    }
  }
  return { patches, grid: [1, gh, gw] };
}
