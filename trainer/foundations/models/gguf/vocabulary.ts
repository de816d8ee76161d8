import * as path from 'node:path';
import { z } from 'zod';
import type { ModelConfig } from '../modelConfig';
import { TokenizerError } from '../modelErrors';
import { readJsonFile } from '../files/jsonFile';
import type { Tokenizer } from '../text/tokenizer';
import { meta, type MetadataValue } from './format';

/**
 * The tokenizer as GGUF metadata for a GPT-2-style byte-level BPE (every family we train:
 * Qwen2/2.5/3, Llama 3, SmolLM2), the way llama.cpp's convert_hf_to_gguf.py writes it:
 * `tokenizer.ggml.model` "gpt2", the pre-tokenizer's name, one token string per embedding row
 * (rows the tokenizer does not use become `[PAD<i>]`, type UNUSED), each token's type, the
 * merges as "a b", the special token ids, and the chat template(s).
 */

/** llama.cpp's token types (SentencePiece's numbering). */
export const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, userDefined: 4, unused: 5, byte: 6 } as const;

const TokenizerJson = z.looseObject({
  model: z.looseObject({
    type: z.literal('BPE', { message: 'only byte-level BPE tokenizers (model.type "BPE") can be exported to GGUF' }),
    vocab: z.record(z.string(), z.number().int().nonnegative()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])),
  }),
  added_tokens: z
    .array(z.looseObject({ id: z.number().int().nonnegative(), content: z.string(), special: z.boolean().optional() }))
    .default([]),
  pre_tokenizer: z.unknown().optional(),
});

const TokenizerConfigJson = z.looseObject({
  add_bos_token: z.boolean().nullable().optional(),
  add_eos_token: z.boolean().nullable().optional(),
});

/** Split regexes of the pre-tokenizers llama.cpp implements, by its name for them. */
const SPLIT_PATTERNS: Record<string, string> = {
  // Qwen2, Qwen2.5, Qwen3: single digits.
  qwen2:
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  // Llama 3: digits in groups of up to three.
  'llama-bpe':
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};

interface PreTokenizerJson {
  type?: string;
  pretokenizers?: PreTokenizerJson[];
  pattern?: { Regex?: string; String?: string };
  use_regex?: boolean;
  individual_digits?: boolean;
}

/**
 * llama.cpp's name for the tokenizer's pre-tokenizer (`tokenizer.ggml.pre`). convert_hf_to_gguf
 * recognises it by hashing the token ids of a test text, which a vocabulary we cut short
 * changes; the pre-tokenizer's own definition is what llama.cpp reimplements, so match that.
 */
export function preTokenizerName(preTokenizer: unknown, file: string): string {
  const pre = (preTokenizer ?? {}) as PreTokenizerJson;
  const steps = pre.type === 'Sequence' ? (pre.pretokenizers ?? []) : [pre];
  const kinds = steps.map((s) => s.type);
  if (kinds.length === 2 && kinds[0] === 'Split' && kinds[1] === 'ByteLevel' && steps[1].use_regex === false) {
    const regex = steps[0].pattern?.Regex;
    const name = Object.entries(SPLIT_PATTERNS).find(([, pattern]) => pattern === regex)?.[0];
    if (name) return name;
    throw new TokenizerError(
      `${file}: the pre-tokenizer's split pattern ${JSON.stringify(regex)} is not one llama.cpp implements (known: Qwen2's, Llama 3's)`,
    );
  }
  // SmolLM/SmolLM2: single digits, then GPT-2's byte-level regex.
  if (
    kinds.length === 2 &&
    kinds[0] === 'Digits' &&
    steps[0].individual_digits === true &&
    kinds[1] === 'ByteLevel' &&
    steps[1].use_regex !== false
  )
    return 'smollm';
  if (kinds.length === 1 && kinds[0] === 'ByteLevel' && steps[0].use_regex !== false) return 'gpt-2';
  throw new TokenizerError(
    `${file}: pre_tokenizer ${JSON.stringify(kinds)} is not one llama.cpp implements for byte-level BPE (known: Qwen2, Llama 3, SmolLM, GPT-2)`,
  );
}

/** convert_hf_to_gguf's does_token_look_special: added tokens written like <|...|> are control tokens. */
function looksSpecial(token: string): boolean {
  return (token.startsWith('<|') && token.endsWith('|>')) || token === '<pad>' || token === '<mask>';
}

export function vocabularyMetadata(tokenizer: Tokenizer, config: ModelConfig): Array<[string, MetadataValue]> {
  const file = path.join(tokenizer.dir, 'tokenizer.json');
  const json = readJsonFile(file, TokenizerJson, (m) => new TokenizerError(m));
  const tokenizerConfig = readJsonFile(
    path.join(tokenizer.dir, 'tokenizer_config.json'),
    TokenizerConfigJson,
    (m) => new TokenizerError(m),
  );
  const rows = config.vocabSize;
  const tokens: string[] = Array.from({ length: rows }, (_, i) => `[PAD${i}]`);
  const types = new Int32Array(rows).fill(TOKEN_TYPE.unused);
  const place = (id: number, token: string, type: number) => {
    if (id >= rows)
      throw new TokenizerError(
        `${file}: token ${JSON.stringify(token)} has id ${id}, outside the model's ${rows} embedding rows`,
      );
    tokens[id] = token;
    types[id] = type;
  };
  for (const [token, id] of Object.entries(json.model.vocab)) place(id, token, TOKEN_TYPE.normal);
  for (const added of json.added_tokens)
    place(
      added.id,
      added.content,
      added.special || looksSpecial(added.content) ? TOKEN_TYPE.control : TOKEN_TYPE.userDefined,
    );
  const merges = json.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));

  const entries: Array<[string, MetadataValue]> = [
    ['tokenizer.ggml.model', meta.str('gpt2')],
    ['tokenizer.ggml.pre', meta.str(preTokenizerName(json.pre_tokenizer, file))],
    ['tokenizer.ggml.tokens', meta.strings(tokens)],
    ['tokenizer.ggml.token_type', meta.i32s(types)],
    ['tokenizer.ggml.merges', meta.strings(merges)],
  ];
  // As gguf-py's SpecialVocab: tokenizer_config.json first, config.json for what it leaves out.
  const bos = tokenizer.bosTokenId ?? config.bosTokenId;
  const eos = tokenizer.eosTokenId ?? config.eosTokenIds[0];
  const pad = tokenizer.padTokenId ?? config.padTokenId;
  if (bos !== undefined) entries.push(['tokenizer.ggml.bos_token_id', meta.u32(bos)]);
  if (eos !== undefined) entries.push(['tokenizer.ggml.eos_token_id', meta.u32(eos)]);
  if (pad !== undefined) entries.push(['tokenizer.ggml.padding_token_id', meta.u32(pad)]);
  if (typeof tokenizerConfig.add_bos_token === 'boolean')
    entries.push(['tokenizer.ggml.add_bos_token', meta.bool(tokenizerConfig.add_bos_token)]);
  if (typeof tokenizerConfig.add_eos_token === 'boolean')
    entries.push(['tokenizer.ggml.add_eos_token', meta.bool(tokenizerConfig.add_eos_token)]);
  const templates = tokenizer.chatTemplates?.templates ?? {};
  for (const [name, template] of Object.entries(templates))
    entries.push([
      name === 'default' ? 'tokenizer.chat_template' : `tokenizer.chat_template.${name}`,
      meta.str(template),
    ]);
  const named = Object.keys(templates).filter((n) => n !== 'default');
  if (named.length) entries.push(['tokenizer.chat_templates', meta.strings(named)]);
  return entries;
}
