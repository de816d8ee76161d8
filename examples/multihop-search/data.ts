/**
 * Dataset generator of the multi-hop example. Writes, from a seed:
 *
 *   corpus.jsonl   the knowledge base's documents (what the search tool serves; for reading)
 *   train.jsonl    questions about 3/4 of the people
 *   heldout.jsonl  questions about the other people (evaluation: no person is in both)
 *   sft.jsonl      the warm start's demonstrations, each in a world of its own (see below)
 *
 *   npx tsx examples/multihop-search/data.ts [--out DIR] [--seed N] [--train N] [--heldout N]
 *                                            [--sft N] [--short F]
 *
 * Questions are ordinary ones: "In which country is the company William Harlow works for
 * based?" needs three searches (who William Harlow works for → where Bluefin Labs is based →
 * which country Port Veyra is in). Six templates, one to three searches each (QUESTION_TEMPLATES).
 *
 * SFT demonstrations are whole conversations in chat-message form (`messages`, the assistant's
 * calls as `tool_calls`, results as `tool` messages whose text is what the search tool returns
 * in the demonstration's world). They are imperfect on purpose, so that RL has something to
 * fix: a fraction `short` stops one search early and answers with what it has — the entity the
 * last search found ("In which country was Maria Okafor born?" → searched where she was born,
 * answers with that city), or, for a one-search question, a guess of the right kind without
 * searching. Every search a demonstration makes copies its name correctly, so the warm start
 * learns how to search; how far to search is what RL must fix.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import {
  buildKnowledgeBase,
  factId,
  KB_OPTIONS,
  queryFor,
  RELATIONS,
  type KnowledgeBase,
  type Person,
  type Relation,
} from './kb';
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

/** Each question asks, in ordinary words, for the end of a chain of relations that starts at a person. */
export const QUESTION_TEMPLATES: QuestionTemplate[] = [
  {
    type: 'birth_city',
    answerKind: 'city',
    text: (p) => `Where was ${p} born?`,
    resolve: (_kb, p) => ({ chain: [{ id: p.id, relation: 'home' }], answer: p.birthCity }),
  },
  {
    type: 'employer',
    answerKind: 'organisation',
    text: (p) => `Which company does ${p} work for?`,
    resolve: (_kb, p) => ({ chain: [{ id: p.id, relation: 'company' }], answer: p.organisation }),
  },
  {
    type: 'employer_city',
    answerKind: 'city',
    text: (p) => `In which city is the company that ${p} works for based?`,
    resolve: (kb, p) => ({
      chain: [
        { id: p.id, relation: 'company' },
        { id: p.organisation, relation: 'location' },
      ],
      answer: orgOf(kb, p).city,
    }),
  },
  {
    type: 'birth_country',
    answerKind: 'country',
    text: (p) => `In which country was ${p} born?`,
    resolve: (kb, p) => ({
      chain: [
        { id: p.id, relation: 'home' },
        { id: p.birthCity, relation: 'country' },
      ],
      answer: cityOf(kb, p.birthCity).country,
    }),
  },
  {
    type: 'employer_founder',
    answerKind: 'person',
    text: (p) => `Who founded the company that ${p} works for?`,
    resolve: (kb, p) => ({
      chain: [
        { id: p.id, relation: 'company' },
        { id: p.organisation, relation: 'owner' },
      ],
      answer: orgOf(kb, p).founder,
    }),
  },
  {
    type: 'employer_country',
    answerKind: 'country',
    text: (p) => `In which country is the company that ${p} works for based?`,
    resolve: (kb, p) => {
      const org = orgOf(kb, p);
      return {
        chain: [
          { id: p.id, relation: 'company' },
          { id: org.id, relation: 'location' },
          { id: org.city, relation: 'country' },
        ],
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
  /** A question about another world than the default: that world's relation seed (see MultiWorldSearch). */
  world?: number;
}

/** People for training and people held out, split by a seeded shuffle (1 in 4 held out). */
export function splitPeople(kb: KnowledgeBase, seed: number): { train: Person[]; heldout: Person[] } {
  const shuffled = Random.fromSeed(seed).shuffle([...kb.people]);
  const cut = Math.floor(shuffled.length / 4);
  return { heldout: shuffled.slice(0, cut), train: shuffled.slice(cut) };
}

/** Every question about `people` (one per person and template), in a seeded order, at most `count`. */
export function generateQuestions(
  kb: KnowledgeBase,
  people: readonly Person[],
  options: { seed: number; count: number; prefix: string },
): QuestionRow[] {
  const all = people.flatMap((person) =>
    QUESTION_TEMPLATES.map((template) => {
      const { chain, answer } = template.resolve(kb, person);
      return { template, person, chain, answer: entity(kb, answer).name };
    }),
  );
  if (options.count > all.length)
    throw new RangeError(
      `only ${all.length} distinct questions exist for ${people.length} people; asked for ${options.count}`,
    );
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

export type DemonstrationKind = 'correct' | 'short';

export interface DemonstrationRow {
  id: string;
  kind: DemonstrationKind;
  /** The question it demonstrates. */
  questionId: string;
  messages: ChatMessage[];
}

/** The final reply. */
export const answerReply = (name: string) => `<answer>${name}</answer>`;

function searchTurns(kb: KnowledgeBase, tool: KnowledgeBaseSearch, hops: readonly Hop[]): ChatMessage[] {
  return hops
    .map((hop) => queryFor(hop.relation, entity(kb, hop.id).name))
    .flatMap((query): ChatMessage[] => [
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: tool.name, arguments: { query } } }],
      },
      { role: 'tool', name: tool.name, content: tool.format(tool.search(query)) },
    ]);
}

function wrongAnswer(kb: KnowledgeBase, kind: AnswerKind, right: string, random: Random): string {
  const pool = { city: kb.cities, country: kb.countries, organisation: kb.organisations, person: kb.people }[kind]
    .map((e) => e.name)
    .filter((n) => n !== right);
  return pool[random.nextInt(pool.length)];
}

/**
 * One demonstration per question. Correct ones search each fact of the chain (the person's name
 * comes from the question; each next name from the document just found) and then answer; `short`
 * ones stop one search early, as described at the top.
 */
export function generateDemonstrations(
  kb: KnowledgeBase,
  questions: readonly QuestionRow[],
  options: { seed: number; short: number; idOffset?: number },
): DemonstrationRow[] {
  const tool = kb === knowledgeBase ? search : searchOver(kb);
  if (!(options.short >= 0 && options.short <= 1))
    throw new RangeError(`short is a fraction between 0 and 1, got ${options.short}`);
  const random = Random.fromSeed(options.seed);
  const templates = new Map(QUESTION_TEMPLATES.map((t) => [t.type, t]));
  return questions.map((question, i) => {
    const template = templates.get(question.type)!;
    const hops = question.neededDocs.map(parseFactId);
    const kind: DemonstrationKind = random.nextFloat() < options.short ? 'short' : 'correct';
    let turns: ChatMessage[];
    let answer: string;
    if (kind === 'correct') {
      turns = searchTurns(kb, tool, hops);
      answer = question.answer;
    } else if (hops.length > 1) {
      // The sub-question's answer: the entity the last search made found.
      const made = hops.slice(0, -1);
      turns = searchTurns(kb, tool, made);
      answer = entity(kb, hops[hops.length - 1].id).name;
    } else {
      turns = [];
      answer = wrongAnswer(kb, template.answerKind, question.answer, random);
    }
    return {
      id: `sft-${String(i + (options.idOffset ?? 0)).padStart(4, '0')}`,
      kind,
      questionId: question.id,
      messages: [
        { role: 'system', content: question.system },
        { role: 'user', content: question.prompt },
        ...turns,
        { role: 'assistant', content: answerReply(answer) },
      ],
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
export function generateWorldDemonstrations(
  count: number,
  options: { seed: number; short: number; excludeTypes?: readonly string[] },
): DemonstrationRow[] {
  const random = Random.fromSeed(options.seed);
  const excluded = new Set(options.excludeTypes ?? []);
  return Array.from({ length: count }, (_, i) => {
    const world = buildKnowledgeBase({ ...KB_OPTIONS, relationSeed: random.nextInt(2 ** 31) });
    const person = world.people[random.nextInt(world.people.length)];
    const questions = generateQuestions(world, [person], {
      seed: random.nextInt(2 ** 31),
      count: QUESTION_TEMPLATES.length,
      prefix: `world-${i}`,
    }).filter((q) => !excluded.has(q.type));
    const question = questions[random.nextInt(questions.length)];
    return generateDemonstrations(world, [question], {
      seed: random.nextInt(2 ** 31),
      short: options.short,
      idOffset: i,
    })[0];
  });
}

export interface GenerateOptions {
  out: string;
  seed: number;
  train: number;
  heldout: number;
  sft: number;
  short: number;
}

export const DEFAULTS: Omit<GenerateOptions, 'out'> = { seed: 1, train: 90, heldout: 30, sft: 400, short: 0.75 };

/** Writes the four files into `out`; returns their paths and counts. */
export function generateDataset(options: GenerateOptions): Record<string, { file: string; rows: number }> {
  const kb = knowledgeBase;
  const people = splitPeople(kb, options.seed);
  const train = generateQuestions(kb, people.train, { seed: options.seed + 1, count: options.train, prefix: 'train' });
  const heldout = generateQuestions(kb, people.heldout, {
    seed: options.seed + 2,
    count: options.heldout,
    prefix: 'heldout',
  });
  const sft = generateWorldDemonstrations(options.sft, { seed: options.seed + 3, short: options.short });
  const files = { corpus: kb.documents, train, heldout, sft };
  return Object.fromEntries(
    Object.entries(files).map(([name, rows]) => {
      const file = path.join(options.out, `${name}.jsonl`);
      writeJsonl(file, rows);
      return [name, { file, rows: rows.length }];
    }),
  );
}

/**
 * The question type no training prompt or demonstration of the generalisation split contains.
 * Its two searches are each trained in other types (where was P born: birth_city; which country
 * a city is in: the last of employer_country's three), so it asks for a new composition of
 * skills the policy has, at a depth it has. (The three-search employer_country, held out before,
 * was beyond every arm: 0 of 20 for all, so it could separate nothing.)
 */
export const HELD_OUT_TYPE = 'birth_country';

/** The generalisation split's test sets: what each measures. */
export const TEST_SETS = {
  in_dist: 'held-out people, the training world, the training question types',
  new_world:
    'a world drawn afresh (the same names, every relation redrawn), asked only what the training world answers otherwise',
  new_type: `a question type (${HELD_OUT_TYPE}: two searches, each trained in another type) that no training prompt or demonstration has`,
} as const;
export type TestSetName = keyof typeof TEST_SETS;

export interface GeneralisationSplit {
  /** Training questions: the training people, every type but the held-out one. */
  train: QuestionRow[];
  /** Imperfect demonstrations (each in a world of its own), none of the held-out type. */
  sft: DemonstrationRow[];
  /** A correct demonstration of every training question, in the training world. */
  gold: DemonstrationRow[];
  /** The test sets; a new-world row names its world (`world`: the relation seed the search tool serves it from). */
  sets: Record<TestSetName, QuestionRow[]>;
}

/**
 * The benchmark's split, measuring generalisation three ways (TEST_SETS): questions about people
 * no training question is about; questions in a freshly drawn world, where a policy that
 * memorised the training world's facts answers wrongly and one that searches answers rightly;
 * and a question type absent from every training prompt and demonstration, whose searches the
 * training types teach one by one (HELD_OUT_TYPE). Deterministic in `seed`.
 */
export function generateGeneralisationSplit(options: {
  seed: number;
  sft: number;
  short: number;
  newWorldQuestions: number;
}): GeneralisationSplit {
  const kb = knowledgeBase;
  const people = splitPeople(kb, options.seed);
  const every = (world: KnowledgeBase, who: readonly Person[], prefix: string, seed: number) =>
    generateQuestions(world, who, { seed, count: who.length * QUESTION_TEMPLATES.length, prefix });
  const train = every(kb, people.train, 'train', options.seed + 1).filter((q) => q.type !== HELD_OUT_TYPE);
  const inDist = every(kb, people.heldout, 'in_dist', options.seed + 2).filter((q) => q.type !== HELD_OUT_TYPE);
  const relationSeed = Random.fromSeed(options.seed + 4).nextInt(2 ** 31);
  // A relation drawn again can land on the same value (about half the questions did): those are
  // left out, so that every new-world answer is wrong in the training world and memory cannot pass.
  const trainingAnswer = new Map(every(kb, kb.people, 'training_world', 0).map((q) => [q.prompt, q.answer]));
  const newWorld = every(buildKnowledgeBase({ ...KB_OPTIONS, relationSeed }), kb.people, 'new_world', options.seed + 5)
    .filter((q) => q.type !== HELD_OUT_TYPE && trainingAnswer.get(q.prompt) !== q.answer)
    .slice(0, options.newWorldQuestions)
    .map((q) => ({ ...q, world: relationSeed }));
  const newType = every(kb, kb.people, 'new_type', options.seed + 6).filter((q) => q.type === HELD_OUT_TYPE);
  return {
    train,
    sft: generateWorldDemonstrations(options.sft, {
      seed: options.seed + 3,
      short: options.short,
      excludeTypes: [HELD_OUT_TYPE],
    }),
    gold: generateDemonstrations(kb, train, { seed: options.seed + 7, short: 0 }),
    sets: { in_dist: inDist, new_world: newWorld, new_type: newType },
  };
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
      short: { type: 'string' },
    },
  });
  const number = (name: keyof typeof DEFAULTS): number => {
    const raw = values[name];
    if (raw === undefined) return DEFAULTS[name];
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new Error(`--${name}: expected a number, got ${JSON.stringify(raw)}`);
    return value;
  };
  const written = generateDataset({
    out: values.out!,
    seed: number('seed'),
    train: number('train'),
    heldout: number('heldout'),
    sft: number('sft'),
    short: number('short'),
  });
  for (const [name, { file, rows }] of Object.entries(written))
    console.log(`${name.padEnd(8)} ${String(rows).padStart(5)} rows  ${file}`);
}

if (require.main === module) main(process.argv.slice(2));
