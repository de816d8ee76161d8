/**
 * Dataset generator of the multi-hop example. Writes, from a seed:
 *
 *   corpus.jsonl   the knowledge base's documents (what the search tool serves; for reading)
 *   train.jsonl    questions about 3/4 of the people
 *   heldout.jsonl  questions about the other people (evaluation: no person is in both)
 *   reading.jsonl  the warm start's first stage: reading a name back (see generateReadingDemonstrations)
 *   sft.jsonl      the warm start's task demonstrations, each in a world of its own (see below)
 *
 *   npx tsx examples/multihop-search/data.ts [--out DIR] [--seed N] [--train N] [--heldout N]
 *                                            [--reading N] [--sft N] [--skip F] [--botch F]
 *
 * Questions name their chain of relations and end with the person: "What is the country of the
 * location of the company of Mark?" needs three searches (company of Mark → location of Dragon
 * → country of Stone). Six templates, one to three searches each (QUESTION_TEMPLATES).
 *
 * SFT demonstrations are whole conversations in chat-message form (`messages`, the assistant's
 * calls as `tool_calls`, results as `tool` messages whose text is what the search tool returns
 * in the demonstration's world). They are imperfect on purpose, so that RL has something to
 * fix: a fraction `skip` answers without searching (a guess of the right kind), a fraction
 * `botch` searches one hop too few and answers with a wrong entity of the right kind; the rest
 * search correctly.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { buildKnowledgeBase, factId, KB_OPTIONS, RELATIONS, type KnowledgeBase, type Person, type Relation } from './kb';
import { SYSTEM_PROMPT } from './rows';
import { knowledgeBase, search, searchOver, type KnowledgeBaseSearch } from './tools';

type AnswerKind = 'city' | 'country' | 'organisation' | 'person';

/** One hop: the fact `relation` of the entity `id`. */
interface Hop {
  id: string;
  relation: Relation;
}

interface QuestionTemplate {
  type: string;
  text: (person: string) => string;
  /** The facts to look up, in order (their documents are the needed documents), and the answer's entity. */
  resolve: (kb: KnowledgeBase, person: Person) => { chain: Hop[]; answer: string };
  answerKind: AnswerKind;
}

const entity = (kb: KnowledgeBase, id: string) => kb.byId.get(id)!;
const orgOf = (kb: KnowledgeBase, p: Person) => kb.organisations.find((o) => o.id === p.organisation)!;
const cityOf = (kb: KnowledgeBase, id: string) => kb.cities.find((c) => c.id === id)!;

/** Each question names its chain of relations from the outside in, and ends with the person. */
export const QUESTION_TEMPLATES: QuestionTemplate[] = [
  {
    type: 'birth_city',
    answerKind: 'city',
    text: (p) => `What is the home of ${p}?`,
    resolve: (_kb, p) => ({ chain: [{ id: p.id, relation: 'home' }], answer: p.birthCity }),
  },
  {
    type: 'employer',
    answerKind: 'organisation',
    text: (p) => `What is the company of ${p}?`,
    resolve: (_kb, p) => ({ chain: [{ id: p.id, relation: 'company' }], answer: p.organisation }),
  },
  {
    type: 'employer_city',
    answerKind: 'city',
    text: (p) => `What is the location of the company of ${p}?`,
    resolve: (kb, p) => ({ chain: [{ id: p.id, relation: 'company' }, { id: p.organisation, relation: 'location' }], answer: orgOf(kb, p).city }),
  },
  {
    type: 'birth_country',
    answerKind: 'country',
    text: (p) => `What is the country of the home of ${p}?`,
    resolve: (kb, p) => ({ chain: [{ id: p.id, relation: 'home' }, { id: p.birthCity, relation: 'country' }], answer: cityOf(kb, p.birthCity).country }),
  },
  {
    type: 'employer_founder',
    answerKind: 'person',
    text: (p) => `Who is the owner of the company of ${p}?`,
    resolve: (kb, p) => ({ chain: [{ id: p.id, relation: 'company' }, { id: p.organisation, relation: 'owner' }], answer: orgOf(kb, p).founder }),
  },
  {
    type: 'employer_country',
    answerKind: 'country',
    text: (p) => `What is the country of the location of the company of ${p}?`,
    resolve: (kb, p) => {
      const org = orgOf(kb, p);
      return {
        chain: [{ id: p.id, relation: 'company' }, { id: org.id, relation: 'location' }, { id: org.city, relation: 'country' }],
        answer: cityOf(kb, org.city).country,
      };
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
      neededDocs: q.chain.map((hop) => factId(hop.id, hop.relation)),
      type: q.template.type,
    }));
}

/** The hop a needed document's id stands for (the inverse of factId). */
function parseFactId(id: string): Hop {
  const cut = id.lastIndexOf('/');
  const relation = id.slice(cut + 1) as Relation;
  if (cut < 0 || !RELATIONS.includes(relation)) throw new Error(`not a fact id: ${JSON.stringify(id)}`);
  return { id: id.slice(0, cut), relation };
}

export type DemonstrationKind = 'correct' | 'skip' | 'botch' | 'reading';

export interface DemonstrationRow {
  id: string;
  kind: DemonstrationKind;
  /** The question it demonstrates. */
  questionId: string;
  messages: ChatMessage[];
}

/**
 * The query for a fact: "employer of Mark", the words of its document with the name last. A
 * name after a space is the same token as in the question and the documents; `{"query": "Mark"}`
 * would start it after a quote, a different token the model would have to learn to map to.
 */
export const queryFor = (relation: Relation, name: string) => `${relation} of ${name}`;

/** The final reply; the space keeps the name the token it is everywhere else (see queryFor). */
export const answerReply = (name: string) => `<answer> ${name}</answer>`;

function searchTurns(kb: KnowledgeBase, tool: KnowledgeBaseSearch, hops: readonly Hop[]): ChatMessage[] {
  return hops.map((hop) => queryFor(hop.relation, entity(kb, hop.id).name)).flatMap((query): ChatMessage[] => [
    { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: tool.name, arguments: { query } } }] },
    { role: 'tool', name: tool.name, content: tool.format(tool.search(query)) },
  ]);
}

function wrongAnswer(kb: KnowledgeBase, kind: AnswerKind, right: string, random: Random): string {
  const pool = { city: kb.cities, country: kb.countries, organisation: kb.organisations, person: kb.people }[kind].map((e) => e.name).filter((n) => n !== right);
  return pool[random.nextInt(pool.length)];
}

/**
 * One demonstration per question. Correct ones search each fact of the chain (the person's name
 * comes from the question; each next name is the last word of the document just found) and then
 * answer; `skip` and `botch` ones go wrong as described at the top.
 */
export function generateDemonstrations(
  kb: KnowledgeBase,
  questions: readonly QuestionRow[],
  options: { seed: number; skip: number; botch: number; idOffset?: number },
): DemonstrationRow[] {
  const tool = kb === knowledgeBase ? search : searchOver(kb);
  if (options.skip < 0 || options.botch < 0 || options.skip + options.botch > 1) throw new RangeError('skip and botch are fractions that add up to at most 1');
  const random = Random.fromSeed(options.seed);
  const templates = new Map(QUESTION_TEMPLATES.map((t) => [t.type, t]));
  return questions.map((question, i) => {
    const template = templates.get(question.type)!;
    const hops = question.neededDocs.map(parseFactId);
    const roll = random.nextFloat();
    const kind: DemonstrationKind = roll < options.skip ? 'skip' : roll < options.skip + options.botch ? 'botch' : 'correct';
    let turns: ChatMessage[];
    let answer: string;
    if (kind === 'correct') {
      turns = searchTurns(kb, tool, hops);
      answer = question.answer;
    } else if (kind === 'skip') {
      turns = [];
      answer = wrongAnswer(kb, template.answerKind, question.answer, random);
    } else {
      // One hop too few (a one-hop question searches someone else), then a confident wrong answer.
      const wrongPerson = () => kb.people.filter((p) => p.id !== hops[0].id)[random.nextInt(kb.people.length - 1)].id;
      turns = searchTurns(kb, tool, hops.length > 1 ? hops.slice(0, -1) : [{ ...hops[0], id: wrongPerson() }]);
      answer = wrongAnswer(kb, template.answerKind, question.answer, random);
    }
    return {
      id: `sft-${String(i + (options.idOffset ?? 0)).padStart(4, '0')}`,
      kind,
      questionId: question.id,
      messages: [{ role: 'system', content: question.system }, { role: 'user', content: question.prompt }, ...turns, { role: 'assistant', content: answerReply(answer) }],
    };
  });
}

/**
 * Demonstrations, each in a world of its own: the knowledge base rebuilt from another seed (the
 * same names, related at random) and one question about a random person of it. The warm start
 * so learns to search and to read what a search returns — facts it cannot memorise, because no
 * two demonstrations share a world — and nothing about the world RL trains and evaluates in.
 * (Demonstrations over the training questions' own world teach the opposite: a small model
 * lowers its loss fastest by memorising that world's answers, and never learns to copy a name
 * from a result; we measured 15% held-out exact match after 1,125 such steps.)
 */
export function generateWorldDemonstrations(count: number, options: { seed: number; skip: number; botch: number }): DemonstrationRow[] {
  const random = Random.fromSeed(options.seed);
  return Array.from({ length: count }, (_, i) => {
    const world = buildKnowledgeBase({ ...KB_OPTIONS, relationSeed: random.nextInt(2 ** 31) });
    const person = world.people[random.nextInt(world.people.length)];
    const questions = generateQuestions(world, [person], { seed: random.nextInt(2 ** 31), count: QUESTION_TEMPLATES.length, prefix: `world-${i}` });
    const question = questions[random.nextInt(questions.length)];
    return generateDemonstrations(world, [question], { seed: random.nextInt(2 ** 31), skip: options.skip, botch: options.botch, idOffset: i })[0];
  });
}

/**
 * The first stage of the warm start: conversations that only read a name back ("Who is Mark?" →
 * `<answer> Mark</answer>`), over every name of the knowledge base. A model trained from scratch
 * learns this copy in a few hundred steps; straight on the task it did not learn to copy a name
 * from a question or a search result at all (we measured 1,200 steps: every copied name at
 * chance). With this stage first, the same task demonstrations are learned to a loss of 0.01.
 */
export function generateReadingDemonstrations(count: number, options: { seed: number }): DemonstrationRow[] {
  const random = Random.fromSeed(options.seed);
  const names = [...knowledgeBase.byId.values()].map((e) => e.name);
  return Array.from({ length: count }, (_, i) => {
    const name = names[random.nextInt(names.length)];
    return {
      id: `reading-${String(i).padStart(4, '0')}`,
      kind: 'reading' as const,
      questionId: '',
      messages: [{ role: 'system', content: 'Answer the question.' }, { role: 'user', content: `Who is ${name}?` }, { role: 'assistant', content: answerReply(name) }],
    };
  });
}

export interface GenerateOptions {
  out: string;
  seed: number;
  train: number;
  heldout: number;
  sft: number;
  /** Reading demonstrations, the warm start's first stage. */
  reading: number;
  skip: number;
  botch: number;
}

export const DEFAULTS: Omit<GenerateOptions, 'out'> = { seed: 1, train: 90, heldout: 30, sft: 8000, reading: 2400, skip: 0.55, botch: 0.15 };

/** Writes the five files into `out`; returns their paths and counts. */
export function generateDataset(options: GenerateOptions): Record<string, { file: string; rows: number }> {
  const kb = knowledgeBase;
  const people = splitPeople(kb, options.seed);
  const train = generateQuestions(kb, people.train, { seed: options.seed + 1, count: options.train, prefix: 'train' });
  const heldout = generateQuestions(kb, people.heldout, { seed: options.seed + 2, count: options.heldout, prefix: 'heldout' });
  const sft = generateWorldDemonstrations(options.sft, { seed: options.seed + 3, skip: options.skip, botch: options.botch });
  const reading = generateReadingDemonstrations(options.reading, { seed: options.seed + 4 });
  const files = { corpus: kb.documents, train, heldout, reading, sft };
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
      reading: { type: 'string' },
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
  const written = generateDataset({ out: values.out!, seed: number('seed'), train: number('train'), heldout: number('heldout'), sft: number('sft'), reading: number('reading'), skip: number('skip'), botch: number('botch') });
  for (const [name, { file, rows }] of Object.entries(written)) console.log(`${name.padEnd(8)} ${String(rows).padStart(5)} rows  ${file}`);
}

if (require.main === module) main(process.argv.slice(2));
