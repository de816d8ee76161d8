import * as fs from 'node:fs';
import * as path from 'node:path';
import { BUILT_IN_PREFIX, builtInModelDir, checkBuiltinModelName } from '../builtinModels';
import { HubError } from './hubErrors';
import type { ModelFileSet } from './modelFiles';
import { pullModel, type PullProgress, type PullResult } from './pull';

/**
 * The one place that turns what a user wrote for a model or tokenizer — `model.path` in a
 * config, `--model`, `--tokenizer`, `--checkpoint` — into a folder on disk:
 *
 * 1. an existing path (relative to `baseDir`: the config's folder, or the working directory for
 *    a command-line flag) is that folder;
 * 2. a built-in name (`rollout-studio:<name>`) is a model that ships with Rollout Studio;
 * 3. otherwise `org/name` is a Hugging Face Hub repo id, pulled into the Hugging Face cache
 *    (or found there), and the folder is its snapshot;
 * 4. anything else is an error that says what was looked for.
 *
 * A local folder wins over a repo id of the same spelling, so a folder `Qwen/Qwen3-0.6B` next
 * to the config is used as it is.
 */

export type ModelSource =
  { kind: 'folder'; dir: string } | { kind: 'builtin'; name: string } | { kind: 'hub'; repo: string };

/** `org/name` as the Hub spells repo ids: letters, digits, `-`, `_`, `.`; no `--` or `..`; at most 96 characters a part. */
export function isRepoId(spec: string): boolean {
  const part = '[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?';
  return (
    new RegExp(`^${part}/${part}$`).test(spec) && !spec.includes('--') && !spec.includes('..') && !spec.endsWith('.git')
  );
}

export function classifyModelPath(spec: string, baseDir: string): ModelSource {
  const dir = path.resolve(baseDir, spec);
  if (fs.existsSync(dir)) return { kind: 'folder', dir };
  if (spec.startsWith(BUILT_IN_PREFIX)) return { kind: 'builtin', name: spec.slice(BUILT_IN_PREFIX.length) };
  if (isRepoId(spec)) return { kind: 'hub', repo: spec };
  throw new HubError(
    `"${spec}" is neither a folder (there is nothing at ${dir}) nor a Hugging Face repo id (org/name, e.g. Qwen/Qwen3-0.6B)`,
  );
}

export interface ResolveModelOptions {
  /** Relative paths start here: the config's folder, or the working directory for a flag. */
  baseDir: string;
  /** A branch, tag or commit of a Hub repo (default `main`); refused for a folder. */
  revision?: string;
  /** What names the value in messages: "model.path", "--tokenizer", … */
  field?: string;
  /** Only a tokenizer is needed (`create-model --tokenizer`): the weights are not downloaded. */
  files?: ModelFileSet;
  onProgress?: (progress: PullProgress) => void;
  /** A Hub repo was resolved (from the cache or the network): for a log line. */
  onPulled?: (result: PullResult) => void;
  signal?: AbortSignal;
}

export async function resolveModelPath(spec: string, options: ResolveModelOptions): Promise<string> {
  const field = options.field ? `${options.field}: ` : '';
  let source: ModelSource;
  try {
    source = classifyModelPath(spec, options.baseDir);
  } catch (error) {
    throw new HubError(field + (error as Error).message);
  }
  if (source.kind !== 'hub' && options.revision !== undefined) {
    throw new HubError(
      `${field}a revision ("${options.revision}") applies to a Hugging Face repo id, and "${spec}" is ${source.kind === 'folder' ? `the folder ${source.dir}` : 'a built-in model'}`,
    );
  }
  switch (source.kind) {
    case 'folder':
      return source.dir;
    case 'builtin': {
      // Models that ship with the package (models/builtinModels.ts): an unknown name lists the known ones.
      try {
        checkBuiltinModelName(spec);
        return builtInModelDir(source.name);
      } catch (error) {
        throw new HubError(field + (error as Error).message);
      }
    }
    case 'hub': {
      let result: PullResult;
      try {
        result = await pullModel(source.repo, {
          ...(options.revision !== undefined ? { revision: options.revision } : {}),
          ...(options.files ? { files: options.files } : {}),
          ...(options.onProgress ? { onProgress: options.onProgress } : {}),
          ...(options.signal ? { signal: options.signal } : {}),
        });
      } catch (error) {
        // "models/tiny" may have been meant as a folder that is not there: say so too.
        if (error instanceof HubError && error.reason)
          throw new HubError(
            `${field}${error.message.replace(/\.$/, '')}. (Nor is there a folder ${path.resolve(options.baseDir, spec)}.)`,
            error.reason,
          );
        throw error;
      }
      options.onPulled?.(result);
      return result.snapshotDir;
    }
  }
}
