/**
 * Dataset generator of the deep-search example. Writes, from a seed:
 *
 *   train.jsonl     questions whose chain starts from 3/4 of the people
 *   heldout.jsonl   questions starting from the other people (evaluation)
 *   sft.jsonl       the warm start's task demonstrations, each in a world of its own, imperfect
 *   gold.jsonl      correct demonstrations of the training questions, in the training world: the
 *                   SFT-only baseline of the benchmark (what supervised learning gets from the
 *                   same questions and the same number of updates as RL)
 *
 *   npx tsx examples/deep-search/data.ts [--out DIR] [--seed N]
 *
 * Questions chain two to four facts and name the chain from the outside in, ending with the
 * person: "What is the country of the home of the owner of the company of Mark?" takes
 * search(company of Mark) → search(owner of Dragon) → search(home of Jeff) → atlas(country of Port).
 *
 * Demonstrations are imperfect on purpose, in the ways an agent here goes wrong: `skip` answers
 * without a call; `botch` stops one fact short; `distracted` copies the distractor's name ("was")
 * at one step and follows the wrong chain from there; `wrongtool` asks `search` for a place,
 * reads what comes back and guesses. The rest are correct.
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { factId, type KnowledgeBase, type Person, type Relation } from '../multihop-search/kb';
import { SYSTEM_PROMPT } from './rows';
import {
  atlas as trainingAtlas,
  atlasOver,
  search as trainingSearch,
  searchOver,
  world as trainingWorld,
} from './tools';
import {
  ATLAS_RELATIONS,
  buildDeepWorld,
  DEEP_KB_OPTIONS,
  deepAnswer,
  deepQuery,
  distractorId,
  type DeepWorld,
} from './world';

type AnswerKind = 'city' | 'country' | 'organisation' | 'person';

export interface QuestionTemplate {
  type: string;
  /** The relations of the chain, innermost (the person's) first. */
  relations: Relation[];
  answerKind: AnswerKind;
}

/** Two to four facts; the last fact of six of them is a place (`atlas`). */
export const QUESTION_TEMPLATES: QuestionTemplate[] = [
  { type: 'employer_owner', relations: ['company', 'owner'], answerKind: 'person' },
  { type: 'employer_city', relations: ['company', 'location'], answerKind: 'city' },
  { type: 'home_country', relations: ['home', 'country'], answerKind: 'country' },
  { type: 'owner_home', relations: ['company', 'owner', 'home'], answerKind: 'city' },
  { type: 'employer_country', relations: ['company', 'location', 'country'], answerKind: 'country' },
  { type: 'owner_employer', relations: ['company', 'owner', 'company'], answerKind: 'organisation' },
  { type: 'owner_home_country', relations: ['company', 'owner', 'home', 'country'], answerKind: 'country' },
  { type: 'owner_employer_city', relations: ['company', 'owner', 'company', 'location'], answerKind: 'city' },
];

/** The entity id a relation of an entity points to. */
function follow(kb: KnowledgeBase, id: string, relation: Relation): string {
  const entity = kb.byId.get(id) as unknown as Record<string, string>;
  const field = { home: 'birthCity', company: 'organisation', owner: 'founder', location: 'city', country: 'country' }[
    relation as string
  ];
  if (!field || !entity?.[field]) throw new Error(`no ${relation} for ${id}`);
  return entity[field];
}

/** The chain's hops (entity and relation) and the answer's entity id. */
export function resolveChain(
  kb: KnowledgeBase,
  person: Person,
  relations: readonly Relation[],
): { hops: { id: string; relation: Relation }[]; answer: string } {
  const hops: { id: string; relation: Relation }[] = [];
  let id = person.id;
  for (const relation of relations) {
    hops.push({ id, relation });
    id = follow(kb, id, relation);
  }
  return { hops, answer: id };
}

export function questionText(template: QuestionTemplate, person: string): string {
  const chain = [...template.relations]
    .reverse()
    .map((r) => `the ${r}`)
    .join(' of ');
  return template.answerKind === 'person' ? `Who is ${chain} of ${person}?` : `What is ${chain} of ${person}?`;
}

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

/** Every question about `people` (one per person and template), in a seeded order. */
export function generateQuestions(
  kb: KnowledgeBase,
  people: readonly Person[],
  options: { seed: number; prefix: string },
): QuestionRow[] {
  const all = people.flatMap((person) =>
    QUESTION_TEMPLATES.map((template) => ({ template, person, ...resolveChain(kb, person, template.relations) })),
  );
  return Random.fromSeed(options.seed)
    .shuffle(all)
    .map((q, i) => ({
      id: `${options.prefix}-${String(i).padStart(4, '0')}`,
      system: SYSTEM_PROMPT,
      prompt: questionText(q.template, q.person.name),
      answer: kb.byId.get(q.answer)!.name,
      hops: q.hops.length,
      neededDocs: q.hops.map((h) => factId(h.id, h.relation)),
      type: q.template.type,
    }));
}

export type DemonstrationKind = 'correct' | 'skip' | 'botch' | 'distracted' | 'wrongtool';

export interface DemonstrationRow {
  id: string;
  kind: DemonstrationKind;
  questionId: string;
  messages: ChatMessage[];
}

export interface Mix {
  skip: number;
  botch: number;
  distracted: number;
  wrongtool: number;
}

/** One call and what the tool returns in that world. */
function call(
  tools: { search: ReturnType<typeof searchOver>; atlas: ReturnType<typeof atlasOver> },
  tool: 'search' | 'atlas',
  query: string,
): ChatMessage[] {
  const result =
    tool === 'search'
      ? tools.search.execute({ query })
      : (tools.atlas.execute({ query }, undefined as never) as { content: { text: string }[] });
  const text = result.content.map((c) => ('text' in c ? c.text : '')).join('\n');
  return [
    {
      role: 'assistant',
      content: '',
      tool_calls: [{ type: 'function', function: { name: tool, arguments: { query } } }],
    },
    { role: 'tool', name: tool, content: text },
  ];
}

const toolFor = (relation: Relation): 'search' | 'atlas' => (ATLAS_RELATIONS.includes(relation) ? 'atlas' : 'search');

function wrongAnswer(kb: KnowledgeBase, kind: AnswerKind, right: string, random: Random): string {
  const pool = { city: kb.cities, country: kb.countries, organisation: kb.organisations, person: kb.people }[kind]
    .map((e) => e.name)
    .filter((n) => n !== right);
  return pool[random.nextInt(pool.length)];
}

/** The name a distractor states for a fact (`The old company of Mark was Fire.` → Fire's id). */
function distractorValue(world: DeepWorld, hop: { id: string; relation: Relation }): string | undefined {
  const doc = world.searchDocuments.find((d) => d.id === distractorId(hop.id, hop.relation));
  if (!doc) return undefined;
  const name = doc.text.slice(doc.text.lastIndexOf(' ') + 1, -1);
  return [...world.kb.byId.values()].find((e) => e.name === name)?.id;
}

/**
 * One demonstration of `question` in `world`, of the kind `kind`: the calls a correct agent makes
 * (each next name read from the fact just found), or one of the four ways of going wrong.
 */
export function demonstrate(
  world: DeepWorld,
  template: QuestionTemplate,
  person: Person,
  kind: DemonstrationKind,
  random: Random,
): ChatMessage[] {
  const kb = world.kb;
  const tools =
    world === trainingWorld
      ? { search: trainingSearch, atlas: trainingAtlas }
      : { search: searchOver(world), atlas: atlasOver(world) };
  const { hops, answer } = resolveChain(kb, person, template.relations);
  const name = (id: string) => kb.byId.get(id)!.name;
  const turns: ChatMessage[] = [];
  let final = name(answer);
  if (kind === 'correct') {
    for (const hop of hops) turns.push(...call(tools, toolFor(hop.relation), deepQuery(hop.relation, name(hop.id))));
  } else if (kind === 'skip') {
    final = wrongAnswer(kb, template.answerKind, name(answer), random);
  } else if (kind === 'botch') {
    for (const hop of hops.slice(0, -1))
      turns.push(...call(tools, toolFor(hop.relation), deepQuery(hop.relation, name(hop.id))));
    final = wrongAnswer(kb, template.answerKind, name(answer), random);
  } else if (kind === 'distracted') {
    // Take the distractor's name at one search step that has one, and follow the chain from it.
    const at = hops.findIndex((h) => distractorValue(world, h) !== undefined);
    let id = person.id;
    for (const [k, hop] of template.relations.entries()) {
      turns.push(...call(tools, toolFor(hop), deepQuery(hop, name(id))));
      const next = k === at ? distractorValue(world, { id, relation: hop }) : undefined;
      id = next ?? follow(kb, id, hop);
    }
    final = name(id) === name(answer) ? wrongAnswer(kb, template.answerKind, name(answer), random) : name(id);
  } else {
    // wrongtool: asks `search` where a place is, reads two unrelated facts, guesses.
    const at = hops.findIndex((h) => toolFor(h.relation) === 'atlas');
    for (const hop of hops.slice(0, at)) turns.push(...call(tools, 'search', deepQuery(hop.relation, name(hop.id))));
    turns.push(...call(tools, 'search', deepQuery(hops[at].relation, name(hops[at].id))));
    final = wrongAnswer(kb, template.answerKind, name(answer), random);
  }
  return [...turns, { role: 'assistant', content: deepAnswer(final) }];
}

/** Draw a demonstration kind from the mix; `wrongtool` only where the chain has a place to look up. */
function drawKind(mix: Mix, template: QuestionTemplate, random: Random): DemonstrationKind {
  const roll = random.nextFloat();
  let edge = mix.skip;
  if (roll < edge) return 'skip';
  if (roll < (edge += mix.botch)) return 'botch';
  if (roll < (edge += mix.distracted)) return 'distracted';
  if (roll < edge + mix.wrongtool)
    return template.relations.some((r) => toolFor(r) === 'atlas') ? 'wrongtool' : 'distracted';
  return 'correct';
}

/** Task demonstrations, each in a world of its own (the relations redrawn), about a random person of it. */
export function generateWorldDemonstrations(count: number, options: { seed: number; mix: Mix }): DemonstrationRow[] {
  const random = Random.fromSeed(options.seed);
  return Array.from({ length: count }, (_, i) => {
    const world = buildDeepWorld({ ...DEEP_KB_OPTIONS, relationSeed: random.nextInt(2 ** 31) });
    const person = world.kb.people[random.nextInt(world.kb.people.length)];
    const template = QUESTION_TEMPLATES[random.nextInt(QUESTION_TEMPLATES.length)];
    const kind = drawKind(options.mix, template, random);
    const messages: ChatMessage[] = [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: questionText(template, person.name) },
      ...demonstrate(world, template, person, kind, random),
    ];
    return { id: `sft-${String(i).padStart(5, '0')}`, kind, questionId: '', messages };
  });
}

/** Correct demonstrations of the given questions in the training world (the SFT-only baseline's data). */
export function generateGoldDemonstrations(
  questions: readonly QuestionRow[],
  people: readonly Person[],
): DemonstrationRow[] {
  const random = Random.fromSeed(1);
  const byName = new Map(people.map((p) => [p.name, p]));
  return questions.map((q) => {
    const template = QUESTION_TEMPLATES.find((t) => t.type === q.type)!;
    const person = byName.get(q.prompt.slice(q.prompt.lastIndexOf(' ') + 1, -1))!;
    return {
      id: `gold-${q.id}`,
      kind: 'correct' as const,
      questionId: q.id,
      messages: [
        { role: 'system', content: q.system },
        { role: 'user', content: q.prompt },
        ...demonstrate(trainingWorld, template, person, 'correct', random),
      ],
    };
  });
}

export interface GenerateOptions {
  out: string;
  seed: number;
  sft: number;
  mix: Mix;
}

/** 1,200 demonstrations: a warm start of 150 steps from the long base (the from-scratch model this task once started from took 8,000 and a reading stage). */
export const DEFAULTS: Omit<GenerateOptions, 'out'> = {
  seed: 1,
  sft: 1200,
  mix: { skip: 0.3, botch: 0.15, distracted: 0.15, wrongtool: 0.1 },
};

/** Writes the five files into `out`; returns their paths and counts. */
export function generateDataset(options: GenerateOptions): Record<string, { file: string; rows: number }> {
  const kb = trainingWorld.kb;
  const people = splitPeople(kb, options.seed);
  const train = generateQuestions(kb, people.train, { seed: options.seed + 1, prefix: 'train' });
  const heldout = generateQuestions(kb, people.heldout, { seed: options.seed + 2, prefix: 'heldout' });
  const files = {
    train,
    heldout,
    sft: generateWorldDemonstrations(options.sft, { seed: options.seed + 3, mix: options.mix }),
    gold: generateGoldDemonstrations(train, people.train),
  };
  return Object.fromEntries(
    Object.entries(files).map(([name, rows]) => {
      const file = path.join(options.out, `${name}.jsonl`);
      writeJsonl(file, rows);
      return [name, { file, rows: rows.length }];
    }),
  );
}

if (require.main === module) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { out: { type: 'string', default: path.join(__dirname, 'data') }, seed: { type: 'string', default: '1' } },
  });
  const written = generateDataset({ ...DEFAULTS, out: values.out!, seed: Number(values.seed) });
  for (const [name, { file, rows }] of Object.entries(written))
    console.log(`${name.padEnd(8)} ${String(rows).padStart(5)} rows  ${file}`);
}
