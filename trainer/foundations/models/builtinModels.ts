import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelConfigError } from './modelErrors';

/**
 * Models that ship inside the package, named `rollout-studio:<name>` wherever a model folder is
 * accepted (a config's `model.path`, `--model`; resolved with the other kinds of names in
 * models/hub/resolveModelPath.ts): `rollout-studio:base` is the small pretrained base
 * (trainer/bases/weights/base, made by `rollout-studio pretrain`), `rollout-studio:base-long` the
 * same model continued on conversations of up to 1,024 tokens (trainer/bases/weights/base-long, made
 * by `rollout-studio pretrain rollout-studio:base-long`). The prefix keeps these names apart from
 * relative folders and from Hugging Face Hub ids (`org/name`).
 */
export const BUILT_IN_PREFIX = 'rollout-studio:';
export const BUILT_IN_MODEL_NAMES: readonly string[] = ['base', 'base-long'];

/** The package root: the nearest folder above this file whose package.json is rollout-studio's (works from sources and from dist/). */
function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) {
      try {
        if ((JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name === 'rollout-studio') return dir;
      } catch {
        // not ours; keep looking
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new ModelConfigError(`cannot find rollout-studio's package folder above ${__dirname}`);
    dir = parent;
  }
}

/**
 * Throws when `spec` has the `rollout-studio:` form but names no built-in model. Config loading
 * calls it, so a misspelt name fails before anything runs; a missing base fails only when used.
 */
export function checkBuiltinModelName(spec: string): void {
  if (spec.startsWith(BUILT_IN_PREFIX) && !BUILT_IN_MODEL_NAMES.includes(spec.slice(BUILT_IN_PREFIX.length))) {
    throw new ModelConfigError(
      `"${spec}" is not a built-in model (known: ${BUILT_IN_MODEL_NAMES.map((m) => BUILT_IN_PREFIX + m).join(', ')})`,
    );
  }
}

/** The folder of the built-in model `name` (after the prefix; checked by checkBuiltinModelName). */
export function builtInModelDir(name: string): string {
  const dir = path.join(packageRoot(), 'trainer', 'bases', 'weights', name);
  if (!fs.existsSync(path.join(dir, 'config.json')))
    throw new ModelConfigError(`${BUILT_IN_PREFIX}${name}: ${dir} is missing from this installation of rollout-studio`);
  return dir;
}
