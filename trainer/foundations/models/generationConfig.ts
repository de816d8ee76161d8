import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { ModelConfigError } from './modelErrors';
import { readJsonFile } from './files/jsonFile';

/**
 * `generation_config.json`: the model author's sampling defaults and stop ids. Optional in a
 * model folder. Only what generation uses is normalised; other keys are ignored.
 */

const tokenId = z.number().int().nonnegative();

const GenerationConfigJson = z.looseObject({
  bos_token_id: tokenId.nullable().optional(),
  eos_token_id: z
    .union([tokenId, z.array(tokenId)])
    .nullable()
    .optional(),
  pad_token_id: tokenId.nullable().optional(),
  do_sample: z.boolean().optional(),
  temperature: z.number().nonnegative().optional(),
  top_p: z.number().gt(0).lte(1).optional(),
  top_k: z.number().int().nonnegative().optional(),
  max_new_tokens: z.number().int().positive().nullable().optional(),
  repetition_penalty: z.number().positive().optional(),
});

export interface GenerationConfig {
  bosTokenId?: number;
  /** Every id that ends generation (`eos_token_id` may be one id or a list). */
  eosTokenIds: number[];
  padTokenId?: number;
  doSample?: boolean;
  temperature?: number;
  topP?: number;
  /** 0 means no top-k filtering, as in transformers. */
  topK?: number;
  maxNewTokens?: number;
  repetitionPenalty?: number;
  /** Where it was read from. */
  file: string;
}

export function parseGenerationConfig(raw: unknown, file: string): GenerationConfig {
  const parsed = GenerationConfigJson.safeParse(raw);
  if (!parsed.success) {
    throw new ModelConfigError(
      `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
    );
  }
  const json = parsed.data;
  const eos = json.eos_token_id;
  const config: GenerationConfig = {
    eosTokenIds: eos === undefined || eos === null ? [] : Array.isArray(eos) ? eos : [eos],
    file,
  };
  if (json.bos_token_id != null) config.bosTokenId = json.bos_token_id;
  if (json.pad_token_id != null) config.padTokenId = json.pad_token_id;
  if (json.do_sample !== undefined) config.doSample = json.do_sample;
  if (json.temperature !== undefined) config.temperature = json.temperature;
  if (json.top_p !== undefined) config.topP = json.top_p;
  if (json.top_k !== undefined) config.topK = json.top_k;
  if (json.max_new_tokens != null) config.maxNewTokens = json.max_new_tokens;
  if (json.repetition_penalty !== undefined) config.repetitionPenalty = json.repetition_penalty;
  return config;
}

/** Reads `<dir>/generation_config.json`, or returns undefined when the folder has none. */
export function loadGenerationConfig(dir: string): GenerationConfig | undefined {
  const file = path.join(dir, 'generation_config.json');
  if (!fs.existsSync(file)) return undefined;
  return parseGenerationConfig(
    readJsonFile(file, z.unknown(), (m) => new ModelConfigError(m)),
    file,
  );
}
