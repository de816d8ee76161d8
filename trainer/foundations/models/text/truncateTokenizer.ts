import * as fs from 'node:fs';
import * as path from 'node:path';
import { TokenizerError } from '../modelErrors';

/**
 * A smaller byte-level BPE tokenizer made from a larger one by keeping only its first
 * `merges` merge rules: exactly the tokenizer the original's training would have produced had
 * it stopped there (every kept token is built from kept tokens, and merge priorities keep
 * their order). Added and special tokens (chat markers, `<tool_call>`, …) are kept and
 * renumbered after the vocabulary, so the chat template still works. Examples and benchmarks
 * use it to get a real tokenizer with a vocabulary a CPU trains comfortably.
 */
export interface TruncatedTokenizer {
  vocabSize: number;
  merges: number;
}

type Merge = string | [string, string];

function mergeParts(merge: Merge): [string, string] {
  if (Array.isArray(merge)) return merge;
  const space = merge.indexOf(' ', 1);
  return [merge.slice(0, space), merge.slice(space + 1)];
}

export function truncateBpeTokenizer(sourceDir: string, merges: number, outDir: string): TruncatedTokenizer {
  const tokenizerFile = path.join(sourceDir, 'tokenizer.json');
  if (!fs.existsSync(tokenizerFile)) throw new TokenizerError(`${tokenizerFile}: not found`);
  const json = JSON.parse(fs.readFileSync(tokenizerFile, 'utf8'));
  const model = json.model;
  if (model?.type !== 'BPE')
    throw new TokenizerError(
      `${tokenizerFile}: model.type is ${JSON.stringify(model?.type)}; only BPE tokenizers can be truncated`,
    );
  const allMerges: Merge[] = model.merges;
  if (!Number.isInteger(merges) || merges < 0 || merges > allMerges.length)
    throw new TokenizerError(`truncate: merges must be an integer in [0, ${allMerges.length}], got ${merges}`);
  const vocab: Record<string, number> = model.vocab;
  const merged = new Set(allMerges.map((m) => mergeParts(m).join('')));
  // Base alphabet: tokens no merge produces (the 256 byte symbols of a byte-level BPE).
  const keep = new Set(Object.keys(vocab).filter((token) => !merged.has(token)));
  const kept = allMerges.slice(0, merges);
  for (const m of kept) {
    const [a, b] = mergeParts(m);
    if (!keep.has(a) || !keep.has(b))
      throw new TokenizerError(`${tokenizerFile}: merge ${JSON.stringify(m)} uses a token no earlier merge made`);
    keep.add(a + b);
  }
  const ordered = [...keep].filter((t) => t in vocab).sort((x, y) => vocab[x] - vocab[y]);
  const newVocab: Record<string, number> = {};
  ordered.forEach((token, i) => (newVocab[token] = i));
  const remap = new Map<number, number>();
  for (const token of ordered) remap.set(vocab[token], newVocab[token]);
  let next = ordered.length;
  const added = (json.added_tokens ?? []).map((t: { id: number; content: string }) => {
    const id = next++;
    remap.set(t.id, id);
    return { ...t, id };
  });
  json.model = { ...model, vocab: newVocab, merges: kept };
  json.added_tokens = added;
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'tokenizer.json'), JSON.stringify(json));

  const configFile = path.join(sourceDir, 'tokenizer_config.json');
  if (fs.existsSync(configFile)) {
    const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
    if (config.added_tokens_decoder) {
      config.added_tokens_decoder = Object.fromEntries(
        Object.entries(config.added_tokens_decoder).map(([id, info]) => {
          const mapped = remap.get(Number(id));
          if (mapped === undefined)
            throw new TokenizerError(`${configFile}: added token ${id} is not in tokenizer.json's added_tokens`);
          return [String(mapped), info];
        }),
      );
    }
    fs.writeFileSync(path.join(outDir, 'tokenizer_config.json'), JSON.stringify(config, null, 2));
  }
  for (const extra of ['chat_template.jinja', 'special_tokens_map.json']) {
    if (fs.existsSync(path.join(sourceDir, extra)))
      fs.copyFileSync(path.join(sourceDir, extra), path.join(outDir, extra));
  }
  return { vocabSize: next, merges };
}
