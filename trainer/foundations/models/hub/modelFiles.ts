import { TOKENIZER_FILES } from '../text/tokenizer';
/**
 * Which files of a Hub repo a model needs: its configuration, its tokenizer and chat template,
 * and its safetensors weights — never PyTorch pickles, GGUF, ONNX exports or the extra
 * "original/" copies many repos carry, which would multiply the download.
 *
 * The weights are what `CheckpointReader` opens: `model.safetensors` when the repo has it, else
 * `model.safetensors.index.json` and the shards it lists (so a repo that also ships, say,
 * `consolidated.safetensors` does not download it), else a PEFT adapter's
 * `adapter_model.safetensors`.
 */

/** Read by modelConfig.ts, generationConfig.ts and files/save.ts (an adapter's config). */
export const CONFIG_FILES = ['config.json', 'generation_config.json', 'adapter_config.json'] as const;

export const WEIGHTS_INDEX = 'model.safetensors.index.json';

/** What to fetch: the whole model, or only what a tokenizer folder holds. */
export type ModelFileSet = 'model' | 'tokenizer';

/** A file of the repo as the Hub lists it. */
export interface RepoFile {
  path: string;
  size: number;
}

export interface FileSelection {
  /** Files to fetch now, in order. */
  files: string[];
  /** The index lists the shards: fetch it, then call `shardsFromIndex`. */
  needsIndex: boolean;
}

/** A plain-language reason the repo cannot be used, or the files to fetch. */
export function selectModelFiles(repo: string, listed: readonly RepoFile[], set: ModelFileSet): FileSelection {
  const names = new Set(listed.map((f) => f.path));
  const present = (files: readonly string[]) => files.filter((f) => names.has(f));
  if (set === 'tokenizer') {
    if (!names.has('tokenizer.json'))
      throw new Error(
        `${repo} has no tokenizer.json (it lists ${describe(listed)}); Rollout Studio reads fast tokenizers (tokenizer.json)`,
      );
    return { files: present(TOKENIZER_FILES), needsIndex: false };
  }
  const isAdapter = names.has('adapter_config.json') && !names.has('config.json');
  if (!names.has('config.json') && !isAdapter)
    throw new Error(`${repo} is not a transformers model: it has no config.json (it lists ${describe(listed)})`);
  if (!isAdapter && !names.has('tokenizer.json'))
    throw new Error(
      `${repo} has no tokenizer.json (it lists ${describe(listed)}); Rollout Studio reads fast tokenizers (tokenizer.json)`,
    );
  const base = [...present(CONFIG_FILES), ...present(TOKENIZER_FILES)];
  if (names.has('model.safetensors')) return { files: [...base, 'model.safetensors'], needsIndex: false };
  if (names.has(WEIGHTS_INDEX)) return { files: [...base, WEIGHTS_INDEX], needsIndex: true };
  if (isAdapter && names.has('adapter_model.safetensors'))
    return { files: [...base, 'adapter_model.safetensors'], needsIndex: false };
  const other = listed
    .filter((f) => /\.(bin|pt|pth|gguf|onnx|h5|msgpack|safetensors)$/.test(f.path))
    .map((f) => f.path);
  throw new Error(
    `${repo} has no safetensors weights Rollout Studio can read (model.safetensors or ${WEIGHTS_INDEX})` +
      (other.length
        ? `; it has ${other.slice(0, 6).join(', ')}${other.length > 6 ? ', …' : ''}. Convert PyTorch weights with save_pretrained(..., safe_serialization=True), or pick a repo that ships safetensors`
        : ''),
  );
}

/** The shard files a `model.safetensors.index.json` lists, each a plain file name in the repo's top folder. */
export function shardsFromIndex(indexFile: string, text: string): string[] {
  let weightMap: unknown;
  try {
    weightMap = (JSON.parse(text) as { weight_map?: unknown }).weight_map;
  } catch (error) {
    throw new Error(`${indexFile}: not valid JSON (${(error as Error).message})`, { cause: error });
  }
  if (typeof weightMap !== 'object' || weightMap === null)
    throw new Error(`${indexFile}: expected a "weight_map" object of tensor name → shard file`);
  const shards = [...new Set(Object.values(weightMap as Record<string, unknown>))];
  for (const shard of shards) {
    if (typeof shard !== 'string' || !/^[^/\\]+\.safetensors$/.test(shard) || shard.startsWith('.'))
      throw new Error(
        `${indexFile}: weight_map names ${JSON.stringify(shard)}; expected a .safetensors file name in the repo's top folder`,
      );
  }
  return shards as string[];
}

/** The files a complete cached snapshot must have, given the names it holds (for offline use). */
export function missingFromSnapshot(
  names: ReadonlySet<string>,
  set: ModelFileSet,
  indexShards: () => string[],
): string[] {
  if (set === 'tokenizer') return names.has('tokenizer.json') ? [] : ['tokenizer.json'];
  const isAdapter = names.has('adapter_config.json') && !names.has('config.json');
  const missing: string[] = [];
  if (!names.has('config.json') && !isAdapter) missing.push('config.json');
  if (isAdapter) {
    if (!names.has('adapter_model.safetensors')) missing.push('adapter_model.safetensors');
  } else if (!names.has('model.safetensors')) {
    if (!names.has(WEIGHTS_INDEX)) missing.push('model.safetensors');
    else missing.push(...indexShards().filter((s) => !names.has(s)));
  }
  if (!isAdapter && !names.has('tokenizer.json')) missing.push('tokenizer.json');
  return missing;
}

function describe(listed: readonly RepoFile[]): string {
  if (listed.length === 0) return 'no files';
  const names = listed.map((f) => f.path);
  return names.slice(0, 8).join(', ') + (names.length > 8 ? `, … (${names.length} files)` : '');
}
