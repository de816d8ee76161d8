import * as fs from 'node:fs';
import * as path from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { z } from 'zod';
import { TokenizerError } from '../modelErrors';
import { loadGenerationConfig, type GenerationConfig } from '../generationConfig';
import { readJsonFile } from '../files/jsonFile';
import { tokenByteTable } from './tokenBytes';

/** The tokenizer's files in a model folder (copied with it, downloaded with it) when present. */
export const TOKENIZER_FILES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'chat_template.jinja',
  'special_tokens_map.json',
] as const;

/**
 * A model folder's tokenizer: `tokenizer.json` run by `@huggingface/tokenizers`, with the
 * special tokens, stop ids and chat template(s) from `tokenizer_config.json` (and
 * `generation_config.json`, `chat_template.jinja` where present).
 *
 * Encoding never adds special tokens unless asked: chat templates write them as text, and the
 * trainer deals in exact token ids.
 */

/** A special-token entry: a string, or an AddedToken object with `content`. */
const SpecialTokenJson = z
  .union([z.string(), z.looseObject({ content: z.string() })])
  .nullable()
  .optional();

const TokenizerConfigJson = z.looseObject({
  chat_template: z
    .union([z.string(), z.array(z.looseObject({ name: z.string(), template: z.string() }))])
    .nullable()
    .optional(),
  bos_token: SpecialTokenJson,
  eos_token: SpecialTokenJson,
  pad_token: SpecialTokenJson,
  unk_token: SpecialTokenJson,
  additional_special_tokens: z.array(z.union([z.string(), z.looseObject({ content: z.string() })])).optional(),
  clean_up_tokenization_spaces: z.boolean().optional(),
  model_max_length: z.number().optional(),
});
type TokenizerConfigJson = z.infer<typeof TokenizerConfigJson>;

const TokenizerJson = z.looseObject({
  model: z.looseObject({ type: z.string().optional() }),
  decoder: z.looseObject({ type: z.string().optional() }).nullable().optional(),
  added_tokens: z
    .array(z.looseObject({ id: z.number().int().nonnegative(), content: z.string(), special: z.boolean().optional() }))
    .optional(),
});

export interface AddedTokenInfo {
  id: number;
  content: string;
  /** Special tokens (`<|im_end|>`) vs. merely added ones (`<tool_call>`, `<think>`). */
  special: boolean;
}

/** The special-token strings chat templates refer to (`{{ bos_token }}`, `{{ eos_token }}`). */
export interface SpecialTokenStrings {
  bos_token?: string;
  eos_token?: string;
  pad_token?: string;
  unk_token?: string;
}

export interface ChatTemplateSources {
  /** Template source by name; a single template is named `default`. */
  templates: Record<string, string>;
  /** Where they came from, for error messages. */
  file: string;
}

function tokenContent(token: z.infer<typeof SpecialTokenJson>): string | undefined {
  if (token === null || token === undefined) return undefined;
  return typeof token === 'string' ? token : token.content;
}

export class Tokenizer {
  /** Largest token id + 1 (added tokens included): the smallest embedding that covers it. */
  readonly vocabSize: number;
  /** Every added token (special or not), by id. */
  readonly addedTokens: readonly AddedTokenInfo[];
  readonly specialTokenStrings: SpecialTokenStrings;
  readonly bosTokenId: number | undefined;
  /** The tokenizer's own `eos_token` (for chat models: the end-of-turn token). */
  readonly eosTokenId: number | undefined;
  /** Every id that ends generation: `eos_token` and generation_config.json's `eos_token_id`. */
  readonly eosTokenIds: readonly number[];
  readonly padTokenId: number | undefined;
  readonly generationConfig: GenerationConfig | undefined;
  readonly chatTemplates: ChatTemplateSources | undefined;

  private readonly addedByContent: Map<string, AddedTokenInfo>;
  private readonly specialIds: Set<number>;
  /** How vocabulary strings map to bytes (see tokenBytes.ts): byte-level BPE or SentencePiece-style. */
  readonly vocabularyEncoding: 'byte-level' | 'sentencepiece';
  private byteTable: (Uint8Array | undefined)[] | undefined;
  private longest: number | undefined;

  private constructor(
    /** The folder the files came from. */
    readonly dir: string,
    private readonly hf: HfTokenizer,
    config: TokenizerConfigJson,
    tokenizerJson: z.infer<typeof TokenizerJson>,
    configFile: string,
  ) {
    this.addedTokens = (tokenizerJson.added_tokens ?? []).map((t) => ({
      id: t.id,
      content: t.content,
      special: t.special ?? false,
    }));
    this.addedByContent = new Map(this.addedTokens.map((t) => [t.content, t]));
    this.specialIds = new Set(this.addedTokens.filter((t) => t.special).map((t) => t.id));
    this.vocabularyEncoding = JSON.stringify(tokenizerJson.decoder ?? {}).includes('"ByteLevel"')
      ? 'byte-level'
      : 'sentencepiece';
    let maxId = -1;
    for (const id of hf.get_vocab(true).values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;

    const strings: SpecialTokenStrings = {};
    for (const key of ['bos_token', 'eos_token', 'pad_token', 'unk_token'] as const) {
      const content = tokenContent(config[key]);
      if (content !== undefined) strings[key] = content;
    }
    this.specialTokenStrings = strings;
    const idOf = (key: keyof SpecialTokenStrings): number | undefined => {
      const content = strings[key];
      if (content === undefined) return undefined;
      const id = this.findTokenId(content);
      if (id === undefined)
        throw new TokenizerError(
          `${configFile}: ${key} "${content}" is not a token of ${path.join(dir, 'tokenizer.json')}`,
        );
      return id;
    };
    this.bosTokenId = idOf('bos_token');
    this.eosTokenId = idOf('eos_token');
    this.generationConfig = loadGenerationConfig(dir);
    this.padTokenId = idOf('pad_token') ?? this.generationConfig?.padTokenId;
    this.eosTokenIds = [
      ...new Set([
        ...(this.eosTokenId === undefined ? [] : [this.eosTokenId]),
        ...(this.generationConfig?.eosTokenIds ?? []),
      ]),
    ];
    for (const id of this.eosTokenIds) {
      if (id >= this.vocabSize)
        throw new TokenizerError(
          `${this.generationConfig!.file}: eos_token_id ${id} is outside the vocabulary (size ${this.vocabSize})`,
        );
    }
    this.chatTemplates = readChatTemplates(dir, config, configFile);
  }

  /** Loads `tokenizer.json` and `tokenizer_config.json` (both required) from `dir`. */
  static load(dir: string): Tokenizer {
    const tokenizerFile = path.join(dir, 'tokenizer.json');
    const configFile = path.join(dir, 'tokenizer_config.json');
    const makeError = (m: string) => new TokenizerError(m);
    const tokenizerJson = readJsonFile(tokenizerFile, TokenizerJson, makeError);
    const config = readJsonFile(configFile, TokenizerConfigJson, makeError);
    let hf: HfTokenizer;
    try {
      hf = new HfTokenizer(tokenizerJson, {
        ...config,
        additional_special_tokens: (config.additional_special_tokens ?? []).map((t) =>
          typeof t === 'string' ? t : t.content,
        ),
      });
    } catch (error) {
      throw new TokenizerError(
        `${tokenizerFile}: cannot be used by @huggingface/tokenizers (${(error as Error).message})`,
      );
    }
    return new Tokenizer(dir, hf, config, tokenizerJson, configFile);
  }

  /** Token ids of `text`. Special tokens written in the text (`<|im_start|>`) become their ids. */
  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    if (text.length === 0) return [];
    return this.hf.encode(text, { add_special_tokens: options.addSpecialTokens ?? false }).ids;
  }

  /** The text of `ids`, special tokens included unless skipped; spaces are never "cleaned up". */
  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    this.checkIds(ids);
    return this.hf.decode([...ids], {
      skip_special_tokens: options.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: false,
    });
  }

  /**
   * Each token's own text, for showing tokens one by one. A token holding part of a UTF-8
   * character shows U+FFFD; concatenated pieces equal `decode(ids)` wherever no character is
   * split across tokens.
   */
  pieces(ids: readonly number[]): string[] {
    this.checkIds(ids);
    return ids.map((id) => this.hf.decode([id], { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
  }

  /** The id of the single token whose text is `token` (`<tool_call>`, `<|im_end|>`, `\n`), or undefined. */
  findTokenId(token: string): number | undefined {
    const added = this.addedByContent.get(token);
    if (added) return added.id;
    const ids = this.encode(token);
    if (ids.length === 1 && this.hf.decode(ids, { clean_up_tokenization_spaces: false }) === token) return ids[0];
    return undefined;
  }

  /** Like `findTokenId`, but a text that is not exactly one token is an error. */
  tokenId(token: string): number {
    const id = this.findTokenId(token);
    if (id === undefined) {
      const ids = this.encode(token);
      throw new TokenizerError(
        `${path.join(this.dir, 'tokenizer.json')}: ${JSON.stringify(token)} is not a single token (it encodes as ${ids.length} tokens: [${ids.join(', ')}])`,
      );
    }
    return id;
  }

  /**
   * The bytes each token id stands for in decoded text (added tokens: their content), built once:
   * what a grammar needs to decide which tokens may come next. Undefined for ids without a token.
   */
  tokenBytes(): readonly (Uint8Array | undefined)[] {
    this.byteTable ??= tokenByteTable(
      this.vocabSize,
      (id) => this.hf.id_to_token(id),
      this.vocabularyEncoding,
      this.addedTokens,
    );
    return this.byteTable;
  }

  /** The most bytes one token stands for: a text of n bytes is at least n / this many tokens. */
  longestTokenBytes(): number {
    if (this.longest === undefined) {
      let longest = 1;
      for (const bytes of this.tokenBytes()) if (bytes && bytes.length > longest) longest = bytes.length;
      this.longest = longest;
    }
    return this.longest;
  }

  /** Added tokens marked special, by content (`<|im_start|>` → 151644). */
  specialTokens(): Map<string, number> {
    return new Map(this.addedTokens.filter((t) => t.special).map((t) => [t.content, t.id]));
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** Whether `id` stands for a token of this tokenizer (an embedding may have more rows than it has tokens). */
  hasToken(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize && this.hf.id_to_token(id) !== undefined;
  }

  /** Whether `token` is an added token: the tokenizer always splits text at it, never merges across it. */
  isAddedToken(token: string): boolean {
    return this.addedByContent.has(token);
  }

  private checkIds(ids: readonly number[]): void {
    for (const id of ids) {
      if (!this.hasToken(id)) {
        throw new TokenizerError(
          `${path.join(this.dir, 'tokenizer.json')}: token id ${id} is not in the vocabulary (size ${this.vocabSize})`,
        );
      }
    }
  }
}

/**
 * The chat template(s): `chat_template.jinja` when the folder has one (newer transformers save
 * it there), else `chat_template` in tokenizer_config.json (a string or a list of named ones).
 */
function readChatTemplates(
  dir: string,
  config: TokenizerConfigJson,
  configFile: string,
): ChatTemplateSources | undefined {
  const jinjaFile = path.join(dir, 'chat_template.jinja');
  if (fs.existsSync(jinjaFile)) return { templates: { default: fs.readFileSync(jinjaFile, 'utf8') }, file: jinjaFile };
  const template = config.chat_template;
  if (template === undefined || template === null) return undefined;
  if (typeof template === 'string') return { templates: { default: template }, file: configFile };
  return { templates: Object.fromEntries(template.map((t) => [t.name, t.template])), file: configFile };
}
