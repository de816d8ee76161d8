/**
 * Dataset generator of the multi-hop example. Writes, from a seed:
 *
 *   corpus.jsonl   the knowledge base's documents (what the search tool serves; for reading)
 *   train.jsonl    questions about 3/4 of the people
 *   heldout.jsonl  questions about the other people (evaluation: no person is in both)
 *   sft.jsonl      demonstration conversations for the warm start (see below)
 *
 *   npx tsx examples/multihop-search/data.ts [--out DIR] [--seed N] [--train N] [--heldout N]
 *                                            [--sft N] [--skip F] [--botch F]
 *
 * Questions need one to three searches: where a person was born (1), whom they work for (1),
 * where their employer is headquartered (2), in which country they were born (2), who founded
 * their employer (2), in which country their employer is headquartered (3).
 *
 * SFT demonstrations are whole conversations in chat-message form (`messages`, the assistant's
 * calls as `tool_calls`, results as `tool` messages whose text is what the real search tool
 * returns). They are imperfect on purpose, so that RL has something to fix: a fraction `skip`
 * answers without searching (a guess of the right kind), a fraction `botch` searches one hop
 * too few and answers with a wrong entity of the right kind; the rest search correctly.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import type { KnowledgeBase, Person } from './kb';
import { SYSTEM_PROMPT } from './rows';
import { knowledgeBase, search } from './tools';

type AnswerKind = 'city' | 'country' | 'organisation' | 'person';

interface QuestionTemplate {
  type: string;
  text: (person: string) => string;
  /** The entities to look up, in order (their documents are the needed documents), and the answer. */
  resolve: (kb: KnowledgeBase, person: Person) => { chain: string[]; answer: string };
  answerKind: AnswerKind;
}

const entity = (kb: KnowledgeBase, id: string) => kb.byId.get(id)!;
const orgOf = (kb: KnowledgeBase, p: Person) => kb.organisations.find((o) => o.id === p.organisation)!;
const cityOf = (kb: KnowledgeBase, id: string) => kb.cities.find((c) => c.id === id)!;

export const QUESTION_TEMPLATES: QuestionTemplate[] = [
  { type: 'birth_city', answerKind: 'city', text: (p) => `In which city was ${p} born?`, resolve: (_kb, p) => ({ chain: [p.id], answer: p.birthCity }) },
  { type: 'employer', answerKind: 'organisation', text: (p) => `Which organisation does ${p} work for?`, resolve: (_kb, p) => ({ chain: [p.id], answer: p.organisation }) },
  {
    type: 'employer_city',
    answerKind: 'city',
    text: (p) => `In which city is the organisation that ${p} works for headquartered?`,
    resolve: (kb, p) => ({ chain: [p.id, p.organisation], answer: orgOf(kb, p).city }),
  },
  {
    type: 'birth_country',
    answerKind: 'country',
    text: (p) => `In which country was ${p} born?`,
    resolve: (kb, p) => ({ chain: [p.id, p.birthCity], answer: cityOf(kb, p.birthCity).country }),
  },
  {
    type: 'employer_founder',
    answerKind: 'person',
    text: (p) => `Who founded the organisation that ${p} works for?`,
    resolve: (kb, p) => ({ chain: [p.id, p.organisation], answer: orgOf(kb, p).founder }),
  },
  {
    type: 'employer_country',
    answerKind: 'country',
    text: (p) => `In which country is the organisation that ${p} works for headquartered?`,
    resolve: (kb, p) => {
      const org = orgOf(kb, p);
      return { chain: [p.id, org.id, org.city], answer: cityOf(kb, org.city).country };
    },
  },
];

export interface QuestionRow {
  id: string;
  system: string;
  prompt: string;
  answer: string;
  hops: number;
  neededDocs: string[];
  type: string;
}

/** People for training and people held out, split by a seeded shuffle (1 in 4 held out). */
export function splitPeople(kb: KnowledgeBase, seed: number): { train: Person[]; heldout: Person[] } {
  const shuffled = Random.fromSeed(seed).shuffle([...kb.people]);
  const cut = Math.floor(shuffled.length / 4);
  return { heldout: shuffled.slice(0, cut), train: shuffled.slice(cut) };
}

/** Every question about `people` (one per person and template), in a seeded order, at most `count`. */
export function generateQuestions(kb: KnowledgeBase, people: readonly Person[], options: { seed: number; count: number; prefix: string }): QuestionRow[] {
  const all = people.flatMap((person) =>
    QUESTION_TEMPLATES.map((template) => {
      const { chain, answer } = template.resolve(kb, person);
      return { template, person, chain, answer: entity(kb, answer).name };
    }),
  );
  if (options.count > all.length) throw new RangeError(`only ${all.length} distinct questions exist for ${people.length} people; asked for ${options.count}`);
  return Random.fromSeed(options.seed)
    .shuffle(all)
    .slice(0, options.count)
    .map((q, i) => ({
      id: `${options.prefix}-${String(i).padStart(4, '0')}`,
      system: SYSTEM_PROMPT,
      prompt: q.template.text(q.person.name),
      answer: q.answer,
      hops: q.chain.length,
      neededDocs: q.chain,
      type: q.template.type,
    }));
}

export type DemonstrationKind = 'correct' | 'skip' | 'botch';

export interface DemonstrationRow {
  id: string;
  kind: DemonstrationKind;
  /** The question it demonstrates. */
  questionId: string;
  messages: ChatMessage[];
}

/**
 * The query for a name: "about <name>". The word before the name keeps the name the same token
 * as in the question and the documents (a name after a space); `{"query": "<name>"}` would start
 * it after a quote, a different token the model would have to learn to map to.
 */
export const queryFor = (name: string) => `about ${name}`;

/** The final reply; the space keeps the name the token it is everywhere else (see queryFor). */
export const answerReply = (name: string) => `<answer> ${name}</answer>`;

function searchTurns(names: readonly string[]): ChatMessage[] {
  return names.map(queryFor).flatMap((query): ChatMessage[] => [
    { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: search.name, arguments: { query } } }] },
    { role: 'tool', name: search.name, content: search.format(search.search(query)) },
  ]);
}

function wrongAnswer(kb: KnowledgeBase, kind: AnswerKind, right: string, random: Random): string {
  const pool = { city: kb.cities, country: kb.countries, organisation: kb.organisations, person: kb.people }[kind].map((e) => e.name).filter((n) => n !== right);
  return pool[random.nextInt(pool.length)];
}

/**
 * One demonstration per question. Correct ones search each entity of the chain by name (the
 * person's name comes from the question; each next name is in the document just found) and then
 * answer; `skip` and `botch` ones go wrong as described at the top.
 */
export function generateDemonstrations(kb: KnowledgeBase, questions: readonly QuestionRow[], options: { seed: number; skip: number; botch: number }): DemonstrationRow[] {
  if (options.skip < 0 || options.botch < 0 || options.skip + options.botch > 1) throw new RangeError('skip and botch are fractions that add up to at most 1');
  const random = Random.fromSeed(options.seed);
  const templates = new Map(QUESTION_TEMPLATES.map((t) => [t.type, t]));
  return questions.map((question, i) => {
    const template = templates.get(question.type)!;
    const names = question.neededDocs.map((id) => entity(kb, id).name);
    const roll = random.nextFloat();
    const kind: DemonstrationKind = roll < options.skip ? 'skip' : roll < options.skip + options.botch ? 'botch' : 'correct';
    let turns: ChatMessage[];
    let answer: string;
    if (kind === 'correct') {
      turns = searchTurns(names);
      answer = question.answer;
    } else if (kind === 'skip') {
      turns = [];
      answer = wrongAnswer(kb, template.answerKind, question.answer, random);
    } else {
      // One hop too few (a one-hop question searches someone else), then a confident wrong answer.
      const queries = names.length > 1 ? names.slice(0, -1) : [kb.people[random.nextInt(kb.people.length)].name];
      turns = searchTurns(queries);
      answer = wrongAnswer(kb, template.answerKind, question.answer, random);
    }
    return {
      id: `sft-${String(i).padStart(4, '0')}`,
      kind,
      questionId: question.id,
      messages: [{ role: 'system', content: question.system }, { role: 'user', content: question.prompt }, ...turns, { role: 'assistant', content: answerReply(answer) }],
    };
  });
}

export interface GenerateOptions {
  out: string;
  seed: number;
  train: number;
  heldout: number;
  sft: number;
  skip: number;
  botch: number;
}

export const DEFAULTS: Omit<GenerateOptions, 'out'> = { seed: 1, train: 198, heldout: 66, sft: 600, skip: 0.55, botch: 0.15 };

/** Writes the four files into `out`; returns their paths and counts. */
export function generateDataset(options: GenerateOptions): Record<string, { file: string; rows: number }> {
  const kb = knowledgeBase;
  const people = splitPeople(kb, options.seed);
  const train = generateQuestions(kb, people.train, { seed: options.seed + 1, count: options.train, prefix: 'train' });
  const heldout = generateQuestions(kb, people.heldout, { seed: options.seed + 2, count: options.heldout, prefix: 'heldout' });
  // More demonstrations than questions cycle through the questions, each drawn anew (correct, skip or botch).
  const demonstrated = Array.from({ length: options.sft }, (_, i) => train[i % train.length]);
  const sft = generateDemonstrations(kb, demonstrated, { seed: options.seed + 3, skip: options.skip, botch: options.botch });
  const files = { corpus: kb.documents, train, heldout, sft };
  return Object.fromEntries(
    Object.entries(files).map(([name, rows]) => {
      const file = path.join(options.out, `${name}.jsonl`);
      writeJsonl(file, rows);
      return [name, { file, rows: rows.length }];
    }),
  );
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string', default: path.join(__dirname, 'data') },
      seed: { type: 'string' },
      train: { type: 'string' },
      heldout: { type: 'string' },
      sft: { type: 'string' },
      skip: { type: 'string' },
      botch: { type: 'string' },
    },
  });
  const number = (name: keyof typeof DEFAULTS): number => {
    const raw = values[name];
    if (raw === undefined) return DEFAULTS[name];
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new Error(`--${name}: expected a number, got ${JSON.stringify(raw)}`);
    return value;
  };
  const written = generateDataset({ out: values.out!, seed: number('seed'), train: number('train'), heldout: number('heldout'), sft: number('sft'), skip: number('skip'), botch: number('botch') });
  for (const [name, { file, rows }] of Object.entries(written)) console.log(`${name.padEnd(8)} ${String(rows).padStart(5)} rows  ${file}`);
}

if (require.main === module) main(process.argv.slice(2));
