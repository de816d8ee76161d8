import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { truncateBpeTokenizer } from '../../models/truncateTokenizer';
import { createModel } from '../../models/createModel';
import type { ModelFamily } from '../../models/modelConfig';
import { ModelConfigError, TokenizerError } from '../../models/modelErrors';
import { UsageError } from '../usage';

export const createModelUsage = `rollout-studio create-model --family qwen2|qwen3|llama --layers N --hidden N --heads N --kv-heads N --intermediate N --tokenizer DIR --out DIR [options]

Writes a Hugging Face model folder with seeded random weights (config.json, model.safetensors,
the tokenizer's files, generation_config.json), for tests, examples and benchmarks.
  --family F          qwen2, qwen3 or llama
  --layers N          decoder layers
  --hidden N          hidden size
  --heads N           attention heads
  --kv-heads N        key/value heads (grouped-query attention when fewer than --heads)
  --intermediate N    MLP intermediate size
  --tokenizer DIR     folder with tokenizer.json and tokenizer_config.json
  --out DIR           the new model folder (must be empty unless --force)
  --seed N            random seed (default 0)
  --head-dim N        head dimension (default hidden / heads)
  --tie-embeddings    share the input embedding with the output layer
  --dtype D           float32 (default) or bfloat16
  --vocab N           embedding rows (default: the tokenizer's size; never less)
  --vocab-multiple N  round the vocabulary up to a multiple of N
  --init I            hf (default: biases 0, norms 1) or varied (random biases and norm scales)
  --tokenizer-merges N  keep only the tokenizer's first N BPE merges (a smaller vocabulary for CPU training)
  --force             write into a folder that already has files`;

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

function required(flag: string, value: string | undefined): string {
  if (value === undefined) throw new UsageError(`create-model: --${flag} is required`);
  return value;
}

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${flag}: expected one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

export async function createModelCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
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
    },
    strict: true,
    allowPositionals: false,
  });
  const positive = (flag: string): number => {
    const n = integer(flag, required(flag, values[flag as keyof typeof values] as string | undefined))!;
    if (n === 0) throw new UsageError(`--${flag}: must be at least 1`);
    return n;
  };
  const family = oneOf<ModelFamily>('family', required('family', values.family), ['qwen2', 'qwen3', 'llama'])!;
  const options = {
    family,
    layers: positive('layers'),
    hidden: positive('hidden'),
    heads: positive('heads'),
    kvHeads: positive('kv-heads'),
    intermediate: positive('intermediate'),
    tokenizer: truncatedIfAsked(required('tokenizer', values.tokenizer), integer('tokenizer-merges', values['tokenizer-merges'])),
    outDir: required('out', values.out),
    seed: integer('seed', values.seed) ?? 0,
    headDim: integer('head-dim', values['head-dim']),
    tieEmbeddings: values['tie-embeddings'],
    dtype: oneOf('dtype', values.dtype, ['float32', 'bfloat16'] as const),
    vocabSize: integer('vocab', values.vocab),
    vocabMultiple: integer('vocab-multiple', values['vocab-multiple']),
    init: oneOf('init', values.init, ['hf', 'varied'] as const),
    overwrite: values.force,
  };
  let created: ReturnType<typeof createModel>;
  try {
    created = createModel(options);
  } catch (error) {
    // Bad sizes or an unusable tokenizer folder are the user's input: no stack trace.
    if (error instanceof ModelConfigError || error instanceof TokenizerError) throw new UsageError(error.message);
    throw error;
  }
  const { config } = created;
  process.stdout.write(
    `wrote ${options.outDir}: ${config.family} (${config.architecture}), ${config.numLayers} layers, hidden ${config.hiddenSize}, ` +
      `${config.numHeads} heads / ${config.numKvHeads} kv heads of ${config.headDim}, intermediate ${config.intermediateSize}, ` +
      `vocabulary ${config.vocabSize}${config.tieWordEmbeddings ? ', tied embeddings' : ''}; ` +
      `${created.parameters.toLocaleString('en-US')} parameters in ${options.dtype ?? 'float32'}\n` +
      `files: ${created.files.join(', ')}\n`,
  );
  return 0;
}
