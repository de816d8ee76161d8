import { before, describe, it } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ChatTemplate } from '#trainer/foundations/models/text/chatTemplate';
import { Tokenizer } from '#trainer/foundations/models/text/tokenizer';
import { truncateBpeTokenizer } from '#trainer/foundations/models/text/truncateTokenizer';
import {
  chainEpisode,
  chatAnswerEpisode,
  plainRequestEpisode,
  toolEpisode,
} from '#trainer/bases/recipes/corpus/chatEpisodes';
import { CorpusContext } from '#trainer/bases/recipes/corpus/corpusContext';
import { encodeSegments, ROLE_ID, SKILL_ID, type CorpusEpisode } from '#trainer/bases/recipes/corpus/episode';
import { EPISODE_KINDS, packStep } from '#trainer/bases/recipes/corpus/mix';
import { factChainEpisode } from '#trainer/bases/recipes/corpus/factChainEpisodes';
import { inductionEpisode, lookupEpisode, repeatEpisode } from '#trainer/bases/recipes/corpus/textEpisodes';
import { generateTool } from '#trainer/bases/recipes/corpus/tools';
import { BASE_RECIPE } from '#trainer/bases/recipes/recipe';
import { qwen3TokenizerDir } from '#trainer/bases/recipes/tokenizerSource';
import { Random } from '#trainer/foundations/models/random';

let context: CorpusContext;
let tokenizer: Tokenizer;

before(() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corpus-tokenizer-'));
  truncateBpeTokenizer(qwen3TokenizerDir(), BASE_RECIPE.tokenizer.merges, dir);
  tokenizer = Tokenizer.load(dir);
  context = new CorpusContext(ChatTemplate.fromTokenizer(tokenizer));
});

/** The text of each contiguous run of target tokens. */
function targetTexts(episode: CorpusEpisode, skill?: keyof typeof SKILL_ID): string[] {
  const runs: string[] = [];
  let current: number[] = [];
  episode.ids.forEach((id, t) => {
    const inTarget =
      episode.roles[t] === ROLE_ID.target && (skill === undefined || episode.skills[t] === SKILL_ID[skill]);
    if (inTarget) current.push(id);
    else if (current.length) {
      runs.push(tokenizer.decode(current));
      current = [];
    }
  });
  if (current.length) runs.push(tokenizer.decode(current));
  return runs;
}

const text = (episode: CorpusEpisode) => tokenizer.decode(episode.ids);
/** The text before the first target token. */
const prefix = (episode: CorpusEpisode) =>
  tokenizer.decode(episode.ids.slice(0, episode.roles.indexOf(ROLE_ID.target)));

describe('pretraining corpus', () => {
  it('gives a token the strongest role of the text it covers, on the whole text tokenized at once', () => {
    const episode = encodeSegments(tokenizer, 'test', [
      { text: 'The code is "', role: 'text' },
      { text: 'Dalvorin Keth', role: 'target', skill: 'name' },
      { text: '".', role: 'text' },
    ]);
    assert.deepEqual(episode.ids, tokenizer.encode('The code is "Dalvorin Keth".'));
    const target = targetTexts(episode)[0];
    assert.ok(target.includes('Dalvorin Keth'), target);
    assert.ok(
      target.length <= '"Dalvorin Keth"'.length,
      `only the tokens touching the name: ${JSON.stringify(target)}`,
    );
    assert.ok(episode.skills.every((s, t) => (episode.roles[t] === ROLE_ID.target ? s === SKILL_ID.name : s === 0)));
  });

  it('repeats a span verbatim: the target is the copy of what came before it', () => {
    const random = Random.fromSeed(3);
    for (const focus of ['number', 'name', 'string', 'span'] as const) {
      for (let i = 0; i < 20; i++) {
        const episode = repeatEpisode(context, random, focus);
        const copy = targetTexts(episode).join('');
        assert.ok(copy.length > 0);
        // Every piece of the target occurs before it (the first occurrence of the span).
        // (A token that joins the copy's last character with the punctuation after it belongs to the copy.)
        for (const piece of targetTexts(episode))
          assert.ok(
            prefix(episode).includes(piece.trim().replace(/\.$/, '')),
            `${focus}: ${JSON.stringify(piece)} not in ${JSON.stringify(prefix(episode))}`,
          );
        assert.ok(targetTexts(episode, focus === 'span' ? 'span' : focus).length > 0, `${focus} skill marked`);
      }
    }
  });

  it('packs random-span copies alone when the mix asks for them (repeat_span)', () => {
    const rows = packStep(context, { repeat_span: 1 }, { target: 1, text: 0.1, sampleBelowOne: 1 }, 16, 64, 1, 1);
    let targets = 0;
    for (const row of rows) {
      assert.equal(row.ids.length, 64);
      // Each row opens with an episode: a copy target lies in its first 64 tokens.
      const firstTarget = row.weights.findIndex((w) => w === 1);
      assert.ok(firstTarget > 0, 'a copy target in every row');
      targets += row.weights.filter((w) => w === 1).length;
    }
    assert.ok(targets >= 16 * 4, `${targets} target tokens`);
  });

  it('copies numbers of many lengths, with decimals and signs', () => {
    const random = Random.fromSeed(4);
    const numbers = Array.from({ length: 300 }, () => targetTexts(repeatEpisode(context, random, 'number'), 'number'))
      .flat()
      .flatMap((s) => s.split(/[\s,;|]+/))
      .filter((s) => s !== '');
    assert.ok(
      numbers.every((n) => /^-?\d+(\.\d+)?$/.test(n)),
      numbers.find((n) => !/^-?\d+(\.\d+)?$/.test(n)),
    );
    assert.ok(numbers.some((n) => n.startsWith('-')) && numbers.some((n) => n.includes('.')));
    assert.ok(
      numbers.some((n) => n.replace(/\D/g, '').length >= 10) && numbers.some((n) => n.replace(/\D/g, '').length <= 2),
    );
    // Qwen3's tokenizer splits digits: a number is as many tokens as it has digits and signs.
    const episode = encodeSegments(tokenizer, 'digits', [{ text: 'x 12345.6', role: 'text' }]);
    assert.equal(episode.ids.length, 9);
  });

  it('answers a lookup and an induction with the value given earlier', () => {
    const random = Random.fromSeed(5);
    for (let i = 0; i < 30; i++) {
      for (const episode of [lookupEpisode(context, random), inductionEpisode(context, random)]) {
        const [value] = targetTexts(episode);
        assert.ok(prefix(episode).includes(value.trim()), `${episode.kind}: ${JSON.stringify(value)}`);
      }
    }
  });

  it('calls a random tool in the chat template with arguments copied from the request, then answers from its result', () => {
    const random = Random.fromSeed(6);
    let called = 0;
    for (let i = 0; i < 30; i++) {
      const episode = toolEpisode(context, random);
      const all = text(episode);
      const [call] = targetTexts(episode, 'tool_call');
      const [answer] = targetTexts(episode, 'tool_answer');
      const match = /<tool_call>\n(\{.*\})\n<\/tool_call><\|im_end\|>$/s.exec(call);
      assert.ok(match, call);
      const parsed = JSON.parse(match[1]) as { name: string; arguments: Record<string, unknown> };
      assert.ok(all.includes(`"name": "${parsed.name}"`), 'the called tool is among those offered');
      const user = all.slice(all.indexOf('<|im_start|>user'), all.indexOf('<|im_start|>assistant'));
      for (const value of Object.values(parsed.arguments)) {
        if (typeof value !== 'boolean')
          assert.ok(user.includes(String(value)), `argument ${JSON.stringify(value)} copied from the request: ${user}`);
      }
      const response = /<tool_response>\n(.*)\n<\/tool_response>/s.exec(all)![1];
      const answered = answer
        .replace(/^<think>\n\n<\/think>\n\n/, '')
        .replace(/<\|im_end\|>$/, '')
        .replace(/^<answer>(.*)<\/answer>$/, '$1')
        .replace(/^The .*? is (.*)\.$/, '$1');
      assert.ok(response.includes(answered), `answer ${JSON.stringify(answered)} read from the result ${response}`);
      called++;
      // The system turn (tool schemas) is read, never scored.
      const system = episode.ids.findIndex((_, t) => episode.roles[t] === ROLE_ID.hidden);
      if (all.startsWith('<|im_start|>system')) assert.equal(system, 0);
    }
    assert.equal(called, 30);
  });

  it('chains two calls: the second argument is copied from the first result', () => {
    const random = Random.fromSeed(7);
    for (let i = 0; i < 20; i++) {
      const episode = chainEpisode(context, random);
      const [first, second] = targetTexts(episode, 'tool_call');
      assert.ok(first && second);
      const args = (JSON.parse(/\{.*\}/s.exec(second)![0]) as { arguments: Record<string, unknown> }).arguments;
      const firstResult = /<tool_response>\n(.*?)\n<\/tool_response>/s.exec(text(episode))![1];
      for (const v of Object.values(args)) assert.ok(firstResult.includes(String(v)), `${v} in ${firstResult}`);
    }
  });

  it('chains facts: each call reads its name out of the last result, past a near miss about the same field', () => {
    const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    /** The field under which `result` says `subject` has `value`: a sentence "The F of S is V." or a record's key. */
    const fieldOf = (result: string, subject: string, value: string): string | undefined => {
      const sentence = new RegExp(`The ([a-z ]+) of ${escape(subject)} is ${escape(value)}\\.`).exec(result);
      if (sentence) return sentence[1];
      const record = result.split('\n').find((line) => line.startsWith('{'));
      if (!record) return undefined;
      const fields = JSON.parse(record) as Record<string, unknown>;
      return fields.name === subject
        ? Object.keys(fields)
            .find((k) => k !== 'name' && String(fields[k]) === value)
            ?.replace(/_/g, ' ')
        : undefined;
    };
    const random = Random.fromSeed(11);
    const depths = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const episode = factChainEpisode(context, random);
      const all = text(episode);
      const calls = targetTexts(episode, 'fact_call').map(
        (c) => Object.values((JSON.parse(/\{.*\}/s.exec(c)![0]) as { arguments: Record<string, string> }).arguments)[0],
      );
      const results = [...all.matchAll(/<tool_response>\n(.*?)\n<\/tool_response>/gs)].map((m) => m[1]);
      const [answer] = targetTexts(episode, 'fact_answer');
      assert.equal(results.length, calls.length);
      depths.add(calls.length);
      const question = /<\|im_start\|>user\n(.*?)<\|im_end\|>/s.exec(all)![1];
      assert.ok(question.includes(calls[0]), `the first call looks up the question's name: ${calls[0]} / ${question}`);
      for (let k = 0; k < results.length; k++) {
        const subject = calls[k];
        // What the next step takes from this result: the next call's name, or (last) the answer's value.
        const record = results[k].split('\n').find((line) => line.startsWith('{'));
        const stated = [...results[k].matchAll(/ is ([^\n]*?)\.(?=\s|$)/g)]
          .map((m) => m[1])
          .concat(record ? Object.values(JSON.parse(record) as object).map(String) : []);
        const value =
          k + 1 < calls.length
            ? calls[k + 1]
            : stated.find((v) => answer.includes(v) && fieldOf(results[k], subject, v));
        assert.ok(value, `the answer ${answer} is read out of ${results[k]}`);
        const field = fieldOf(results[k], subject, value);
        assert.ok(field, `result ${k} states a fact of ${subject} whose value is ${value}: ${results[k]}`);
        assert.ok(question.includes(field), `the question asks for the ${field}: ${question}`);
        const nearMiss =
          new RegExp(`The [a-z]+ ${escape(field)} of ${escape(subject)} was `).test(results[k]) ||
          new RegExp(`"[a-z]+_${escape(field.replace(/ /g, '_'))}":`).test(results[k]) ||
          [...results[k].matchAll(new RegExp(`The ${escape(field)} of (.+?) is `, 'g'))].some((m) => m[1] !== subject);
        assert.ok(nearMiss, `result ${k} has a near miss about the ${field}: ${results[k]}`);
      }
    }
    assert.deepEqual([...depths].sort(), [2, 3, 4]);
  });

  it('calls from requests in plain words: values without parameter names, "from … to …" deciding which parameter takes which', () => {
    const random = Random.fromSeed(8);
    let schemaOrderDiffers = 0;
    for (let i = 0; i < 40; i++) {
      const episode = plainRequestEpisode(context, random);
      const all = text(episode);
      const [call] = targetTexts(episode, 'tool_call');
      const parsed = JSON.parse(/<tool_call>\n(\{.*\})\n<\/tool_call>/s.exec(call)![1]) as {
        name: string;
        arguments: Record<string, string | number>;
      };
      const user = all.slice(all.indexOf('<|im_start|>user'), all.indexOf('<|im_start|>assistant'));
      const keys = Object.keys(parsed.arguments);
      const fromKey = keys.find((k) => /^(from|source|origin|old|current)_/.test(k))!;
      const toKey = keys.find((k) => /^(to|target|destination|new)_/.test(k))!;
      assert.ok(fromKey && toKey, `a pair of parameters in ${call}`);
      const from = String(parsed.arguments[fromKey]);
      const to = String(parsed.arguments[toKey]);
      assert.notEqual(from, to);
      // The request says which is which by its words, not by the parameters' names.
      assert.ok(
        user.includes(`from ${from}`) || user.includes(`out of ${from}`) || user.includes(`${from} to ${to}`),
        `${fromKey}=${from} in ${user}`,
      );
      assert.ok(user.includes(`to ${to}`), `${toKey}=${to} in ${user}`);
      for (const key of keys)
        assert.ok(
          !user.includes(key.replace(/_/g, ' ')) || key === 'number',
          `the request names no parameter (${key}): ${user}`,
        );
      for (const value of Object.values(parsed.arguments))
        assert.ok(user.includes(String(value)), `${value} copied from the request`);
      // Every argument is one the offered schema takes, with an option it lists when it lists options.
      const schema = JSON.parse(all.split('\n').find((line) => line.includes(`"name": "${parsed.name}"`))!) as {
        function: { parameters: { properties: Record<string, { enum?: string[] }> } };
      };
      for (const [key, value] of Object.entries(parsed.arguments)) {
        const property = schema.function.parameters.properties[key];
        assert.ok(property, `${key} in the schema`);
        if (property.enum)
          assert.ok(property.enum.includes(String(value)), `${value} among ${property.enum.join(', ')}`);
      }
      if (
        Object.keys(schema.function.parameters.properties).indexOf(fromKey) >
        Object.keys(schema.function.parameters.properties).indexOf(toKey)
      )
        schemaOrderDiffers++;
      assert.equal(targetTexts(episode, 'tool_answer').length, 1);
    }
    assert.ok(
      schemaOrderDiffers >= 5 && schemaOrderDiffers <= 35,
      `the schema lists the pair in either order (${schemaOrderDiffers} of 40 reversed)`,
    );
  });

  it('states the answer format whenever it asks for one', () => {
    const random = Random.fromSeed(8);
    for (let i = 0; i < 40; i++) {
      const episode = chatAnswerEpisode(context, random);
      const [answer] = targetTexts(episode, 'chat_answer');
      if (answer.includes('<answer>')) assert.ok(/<answer>/.test(prefix(episode)), 'the tag format is asked for');
    }
  });

  it('builds tool schemas the way a user tool is converted, with varied types', () => {
    const random = Random.fromSeed(9);
    const types = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const tool = generateTool(random);
      assert.match(tool.name, /^[a-z][a-z_]*$/);
      const parameters = tool.spec.function.parameters as {
        type: string;
        properties: Record<string, { type?: string; enum?: unknown[] }>;
        required: string[];
      };
      assert.equal(parameters.type, 'object');
      assert.ok(!('$schema' in parameters));
      for (const p of Object.values(parameters.properties)) types.add(p.enum ? 'enum' : p.type!);
      assert.ok(parameters.required.length >= 1);
    }
    assert.deepEqual([...types].sort(), ['boolean', 'enum', 'integer', 'number', 'string']);
  });

  it('packs every step as a pure function of (seed, step): reruns and resumes see the same data', () => {
    const { mix, weights } = BASE_RECIPE.data;
    const a = packStep(context, mix, weights, 3, 256, 11, 5);
    const b = packStep(context, mix, weights, 3, 256, 11, 5);
    const c = packStep(context, mix, weights, 3, 256, 11, 6);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a[0].ids, c[0].ids);
    for (const row of a) {
      assert.equal(row.ids.length, 256);
      assert.equal(row.ids[0], context.endOfText);
      assert.equal(row.weights[0], 0);
    }
  });

  it('samples low-weight tokens without changing their expected weight', () => {
    const { mix } = BASE_RECIPE.data;
    const rows = packStep(context, { prose: 1 }, { target: 1, text: 0.1, sampleBelowOne: 0.25 }, 8, 512, 1, 1);
    const scored = rows.flatMap((r) => [...r.weights].filter((w) => w > 0));
    assert.ok(
      scored.every((w) => Math.abs(w - 0.4) < 1e-6),
      'kept tokens carry 0.1 / 0.25',
    );
    const total = rows.reduce((a, r) => a + r.weights.reduce((x, w) => x + w, 0), 0);
    const expected = rows.reduce((a, r) => a + r.ids.filter((id) => id !== context.endOfText).length, 0) * 0.1;
    assert.ok(Math.abs(total / expected - 1) < 0.1, `Σw ${total.toFixed(1)} ≈ ${expected.toFixed(1)}`);
    assert.ok(Object.keys(mix).every((k) => k in EPISODE_KINDS));
  });
});
