import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { truncateBpeTokenizer } from '../../../foundations/models/text/truncateTokenizer';
import { createModel, type CreatedModel } from '../../../foundations/models/createModel';
import type { ModelFamily } from '../../../foundations/models/modelConfig';
import { isVisionLanguageType, type VisionLanguageFamily } from '../../../foundations/models/vision/visionConfig';
import { ModelConfigError, TokenizerError } from '../../../foundations/models/modelErrors';
import { UsageError } from '../usage';
import { DownloadProgressBar } from '../downloadProgress';
import { resolveModelPath } from '../../../foundations/models/hub';

export const createModelUsage = `rollout-studio create-model --family qwen2|qwen3|llama|qwen2-vl|qwen2.5-vl --layers N --hidden N --heads N --kv-heads N --intermediate N --tokenizer DIR --out DIR [options]

Writes a Hugging Face model folder with seeded random weights (config.json, model.safetensors,
the tokenizer's files, generation_config.json), for tests, examples and benchmarks.
  --family F          qwen2, qwen3, llama, or the vision-language qwen2-vl and qwen2.5-vl
                      (a vision tower, preprocessor_config.json and a chat template with
                      images and tools; the tokenizer must have Qwen's vision tokens)
  --layers N          decoder layers
  --hidden N          hidden size
  --heads N           attention heads
  --kv-heads N        key/value heads (grouped-query attention when fewer than --heads)
  --intermediate N    MLP intermediate size
  --tokenizer DIR     folder with tokenizer.json and tokenizer_config.json, or a Hub repo id
                      (org/name: its tokenizer files are pulled into the Hugging Face cache, not its weights)
  --out DIR           the new model folder (must be empty unless --force)
  --seed N            random seed (default 0)
  --head-dim N        head dimension (default hidden / heads)
  --tie-embeddings    share the input embedding with the output layer
  --dtype D           float32 (default) or bfloat16
  --vocab N           embedding rows (default: the tokenizer's size; never less)
  --vocab-multiple N  round the vocabulary up to a multiple of N
  --init I            hf (default: biases 0, norms 1) or varied (random biases and norm scales)
  --tokenizer-merges N  keep only the tokenizer's first N BPE merges (a smaller vocabulary for CPU training)
  --force             write into a folder that already has files
Vision-language families only:
  --vision-depth N      vision transformer blocks (default 2)
  --vision-width N      the tower's width (default 32)
  --vision-heads N      its attention heads (default 4)
  --vision-mlp N        its MLP width (default 2 × width)
  --patch-size N        pixels per patch side (default 14)
  --merge-size N        patches merged per token side (default 2)
  --window-size N       qwen2.5-vl: window attention window in pixels (default 2 × patch × merge)
  --min-pixels N        preprocessor_config.json min_pixels (default 3136)
  --max-pixels N        preprocessor_config.json max_pixels (default 1003520)`;

function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${flag}: expected a non-negative integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${flag}: ${value} is too large`);
  return n;
}

/** The tokenizer folder to use: the given one, or a copy cut to its first `merges` merges. */
function truncatedIfAsked(dir: string, merges: number | undefined): string {
  if (merges === undefined) return dir;
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'rollout-tokenizer-'));
  try {
    truncateBpeTokenizer(dir, merges, out);
  } catch (error) {
    throw new UsageError(`--tokenizer-merges: ${(error as Error).message}`);
  }
  return out;
}

/** The tokenizer folder: as given, or a Hub repo's tokenizer files in the Hugging Face cache. */
async function tokenizerFolder(spec: string): Promise<string> {
  const bar = new DownloadProgressBar(process.stderr);
  try {
    return await resolveModelPath(spec, {
      baseDir: process.cwd(),
      field: '--tokenizer',
      files: 'tokenizer',
      onProgress: (p) => bar.update(p),
    });
  } finally {
    bar.clear();
  }
}

function required(flag: string, value: string | undefined): string {
  if (value === undefined) throw new UsageError(`create-model: --${flag} is required`);
  return value;
}

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${flag}: expected one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

type CreateModelValues = ReturnType<typeof parseCreateModelArgs>;

function parseCreateModelArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      family: { type: 'string' },
      layers: { type: 'string' },
      hidden: { type: 'string' },
      heads: { type: 'string' },
      'kv-heads': { type: 'string' },
      intermediate: { type: 'string' },
      tokenizer: { type: 'string' },
      out: { type: 'string' },
      seed: { type: 'string' },
      'head-dim': { type: 'string' },
      'tie-embeddings': { type: 'boolean', default: false },
      dtype: { type: 'string' },
      vocab: { type: 'string' },
      'vocab-multiple': { type: 'string' },
      init: { type: 'string' },
      'tokenizer-merges': { type: 'string' },
      force: { type: 'boolean', default: false },
      'vision-depth': { type: 'string' },
      'vision-width': { type: 'string' },
      'vision-heads': { type: 'string' },
      'vision-mlp': { type: 'string' },
      'patch-size': { type: 'string' },
      'merge-size': { type: 'string' },
      'window-size': { type: 'string' },
      'min-pixels': { type: 'string' },
      'max-pixels': { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  }).values;
}

const VISION_FLAGS = [
  'vision-depth',
  'vision-width',
  'vision-heads',
  'vision-mlp',
  'patch-size',
  'merge-size',
  'window-size',
  'min-pixels',
  'max-pixels',
] as const;

export async function createModelCommand(argv: string[]): Promise<number> {
  const values = parseCreateModelArgs(argv);
  const options = await createOptions(values);
  let created: CreatedModel;
  try {
    created = createModel(options);
  } catch (error) {
    // Bad sizes or an unusable tokenizer folder are the user's input: no stack trace.
    if (error instanceof ModelConfigError || error instanceof TokenizerError) throw new UsageError(error.message);
    throw error;
  }
  process.stdout.write(describeCreated(options.outDir, options.dtype, created));
  return 0;
}

/** createModel's options from the flags, each checked in the order the flags are read. */
async function createOptions(values: CreateModelValues) {
  const positive = (flag: string): number => {
    const n = integer(flag, required(flag, values[flag as keyof typeof values] as string | undefined))!;
    if (n === 0) throw new UsageError(`--${flag}: must be at least 1`);
    return n;
  };
  const familyName = oneOf('family', required('family', values.family), [
    'qwen2',
    'qwen3',
    'llama',
    'qwen2-vl',
    'qwen2.5-vl',
  ] as const)!;
  const family: ModelFamily | VisionLanguageFamily =
    familyName === 'qwen2-vl' ? 'qwen2_vl' : familyName === 'qwen2.5-vl' ? 'qwen2_5_vl' : familyName;
  const vision = visionOptions(values, family, familyName);
  return {
    family,
    layers: positive('layers'),
    hidden: positive('hidden'),
    heads: positive('heads'),
    kvHeads: positive('kv-heads'),
    intermediate: positive('intermediate'),
    tokenizer: truncatedIfAsked(
      await tokenizerFolder(required('tokenizer', values.tokenizer)),
      integer('tokenizer-merges', values['tokenizer-merges']),
    ),
    outDir: required('out', values.out),
    seed: integer('seed', values.seed) ?? 0,
    headDim: integer('head-dim', values['head-dim']),
    tieEmbeddings: values['tie-embeddings'],
    dtype: oneOf('dtype', values.dtype, ['float32', 'bfloat16'] as const),
    vocabSize: integer('vocab', values.vocab),
    vocabMultiple: integer('vocab-multiple', values['vocab-multiple']),
    init: oneOf('init', values.init, ['hf', 'varied'] as const),
    overwrite: values.force,
    ...(vision ? { vision: { depth: 2, width: 32, heads: 4, ...vision } } : {}),
  };
}

/** The vision tower's flags (vision-language families only; refused for the others), those given. */
function visionOptions(values: CreateModelValues, family: ModelFamily | VisionLanguageFamily, familyName: string) {
  const given = VISION_FLAGS.filter((flag) => values[flag] !== undefined);
  if (given.length && !isVisionLanguageType(family))
    throw new UsageError(
      `--${given[0]}: only for the vision-language families (qwen2-vl, qwen2.5-vl), not ${familyName}`,
    );
  const visionOption = (flag: (typeof VISION_FLAGS)[number]) => {
    const n = integer(flag, values[flag]);
    if (n === 0) throw new UsageError(`--${flag}: must be at least 1`);
    return n;
  };
  return isVisionLanguageType(family)
    ? Object.fromEntries(
        Object.entries({
          depth: visionOption('vision-depth'),
          width: visionOption('vision-width'),
          heads: visionOption('vision-heads'),
          mlpSize: visionOption('vision-mlp'),
          patchSize: visionOption('patch-size'),
          mergeSize: visionOption('merge-size'),
          windowSize: visionOption('window-size'),
          minPixels: visionOption('min-pixels'),
          maxPixels: visionOption('max-pixels'),
        }).filter(([, v]) => v !== undefined),
      )
    : undefined;
}

/** What was written: the architecture's sizes, the vision tower's, the parameter count and the files. */
function describeCreated(outDir: string, dtype: string | undefined, created: CreatedModel): string {
  const { config } = created;
  return (
    `wrote ${outDir}: ${config.family} (${config.architecture}), ${config.numLayers} layers, hidden ${config.hiddenSize}, ` +
    `${config.numHeads} heads / ${config.numKvHeads} kv heads of ${config.headDim}, intermediate ${config.intermediateSize}, ` +
    `vocabulary ${config.vocabSize}${config.tieWordEmbeddings ? ', tied embeddings' : ''}; ` +
    (config.vision
      ? `vision tower: ${config.vision.depth} blocks of width ${config.vision.width}, patch ${config.vision.patchSize}, merge ${config.vision.spatialMergeSize}; `
      : '') +
    `${created.parameters.toLocaleString('en-US')} parameters in ${dtype ?? 'float32'}\n` +
    `files: ${created.files.join(', ')}\n`
  );
}
