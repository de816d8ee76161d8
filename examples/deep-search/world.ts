/**
 * The world of the deep-search example: the multi-hop example's knowledge base
 * (../multihop-search/kb.ts: people, organisations, cities, countries, random relations), split
 * over two tools and salted with distractors.
 *
 *   search  facts about people and organisations — home, company, job, owner, year — and, next to
 *           each home, company and owner fact, a distractor about the same entity and relation:
 *           "The old company of Mark was Fire." A query for a fact brings up the fact *and* its
 *           distractor, in an order that depends on the query, so the agent must read which line
 *           answers ("… is X.") rather than copy the last name it saw.
 *   atlas   geography — the location of an organisation, the country of a city — one exact fact
 *           per query, and nothing else: `search` does not know where anything is.
 *
 * So a chain such as "the country of the home of the owner of the company of Mark" takes four
 * calls, three to `search` and the last to `atlas`, each reading one name out of a result.
 */
import {
  buildKnowledgeBase,
  factId,
  KB_OPTIONS,
  type KnowledgeBase,
  type KnowledgeBaseOptions,
  type KnowledgeBaseStyle,
  type Relation,
} from '../multihop-search/kb';
import { Random, type SearchDocument } from 'rollout-studio';

/**
 * The world of this example is the multi-hop example's as it was before that example moved to the
 * pretrained base: every name one common word, and every fact, query and question puts the name
 * it is about last ("The company of Mark is Dragon.", "company of Mark") — made for the
 * from-scratch model this task first trained (each name one token of its tokenizer, Qwen3's cut to
 * 16,000 merges; see ../multihop-search/README.md, "Before the pretrained base"). For the long base
 * it starts from now, a name is two to five tokens (121 names: 38 of two, 62 of three).
 */
export const ONE_TOKEN_STYLE: KnowledgeBaseStyle = {
  names: {
    people: [
      'Adam',
      'Alex',
      'Andrew',
      'Bill',
      'Carol',
      'Charles',
      'Chris',
      'Daniel',
      'David',
      'Eric',
      'Frank',
      'George',
      'Greg',
      'Harry',
      'Jack',
      'James',
      'Jeff',
      'John',
      'Joseph',
      'Louis',
      'Mark',
      'Martin',
      'Mary',
      'Matt',
      'Michael',
      'Mike',
      'Nick',
      'Paul',
      'Peter',
      'Richard',
      'Robert',
      'Ryan',
      'Scott',
      'Steve',
      'Thomas',
      'William',
      'Jackson',
      'Johnson',
      'Jones',
      'Smith',
      'Williams',
      'Brown',
      'Jose',
      'Stan',
    ],
    cities: [
      'Stone',
      'River',
      'Valley',
      'Lake',
      'Hill',
      'Brook',
      'Field',
      'Wood',
      'Mount',
      'Rock',
      'Spring',
      'Sand',
      'Island',
      'Beach',
      'Coast',
      'Park',
      'Mill',
      'Port',
      'Point',
      'Fort',
      'Camp',
      'Tree',
      'Water',
      'Square',
    ],
    countries: ['North', 'South', 'East', 'West', 'Silver', 'Gold', 'Green', 'White'],
    organisations: [
      'Dragon',
      'Magic',
      'Fire',
      'Energy',
      'Power',
      'Ball',
      'Block',
      'Board',
      'Book',
      'Card',
      'Cloud',
      'Code',
      'Core',
      'Cross',
      'Data',
      'Digital',
      'Drive',
      'Engine',
      'Force',
      'Future',
      'Global',
      'Graph',
      'Grid',
      'Guard',
      'Machine',
      'Master',
      'Matrix',
      'Media',
      'Model',
      'Music',
      'Network',
      'Quest',
      'Radio',
      'Science',
      'Secret',
      'Smart',
      'Sound',
      'Space',
      'Speed',
      'Steel',
      'Stream',
      'Super',
      'Vector',
      'Video',
      'World',
    ],
  },
  sentence: (relation, subject, value) => `The ${relation} of ${subject} is ${value}.`,
};

/** The knowledge base of this example: the multi-hop example's sizes and seed, in ONE_TOKEN_STYLE. */
export const DEEP_KB_OPTIONS: KnowledgeBaseOptions = { ...KB_OPTIONS, style: ONE_TOKEN_STYLE };

/** A query for one fact: `company of Mark`. */
export const deepQuery = (relation: Relation, name: string) => `${relation} of ${name}`;

/** The final reply: `<answer> Mark</answer>` (the space keeps the name the token it is elsewhere). */
export const deepAnswer = (name: string) => `<answer> ${name}</answer>`;

/** Relations `search` serves; the rest (location, country) only `atlas` knows. */
export const SEARCH_RELATIONS: readonly Relation[] = ['home', 'company', 'job', 'owner', 'year'];
export const ATLAS_RELATIONS: readonly Relation[] = ['location', 'country'];
/** Relations whose facts have a distractor next to them. */
export const DISTRACTED: readonly Relation[] = ['home', 'company', 'owner'];

export interface DeepWorld {
  kb: KnowledgeBase;
  /** What `search` serves: facts and distractors. */
  searchDocuments: SearchDocument[];
  /** What `atlas` serves: one document per geographic fact. */
  atlasDocuments: SearchDocument[];
}

/** The id of a fact's distractor: `person-3/company/old`. */
export const distractorId = (entity: string, relation: Relation) => `${factId(entity, relation)}/old`;

/** The same entity kind as the fact's value, but another one: a plausible wrong answer. */
function wrongValue(kb: KnowledgeBase, relation: Relation, value: string, random: Random): string {
  const pool = relation === 'home' ? kb.cities : relation === 'company' ? kb.organisations : kb.people;
  const others = pool.filter((e) => e.name !== value);
  return others[random.nextInt(others.length)].name;
}

export function buildDeepWorld(options: KnowledgeBaseOptions = DEEP_KB_OPTIONS): DeepWorld {
  const kb = buildKnowledgeBase(options);
  // Distractors are drawn from their own stream, so a world keeps its facts whatever they say.
  const random = Random.fromSeed((options.relationSeed ?? options.seed) * 31 + 7);
  const relationOf = (doc: SearchDocument) => doc.id.slice(doc.id.lastIndexOf('/') + 1) as Relation;
  const searchDocuments: SearchDocument[] = [];
  const atlasDocuments: SearchDocument[] = [];
  for (const doc of kb.documents) {
    const relation = relationOf(doc);
    if (ATLAS_RELATIONS.includes(relation)) {
      atlasDocuments.push(doc);
      continue;
    }
    searchDocuments.push(doc);
    if (!DISTRACTED.includes(relation)) continue;
    const entity = doc.id.slice(0, doc.id.lastIndexOf('/'));
    const value = doc.text.slice(doc.text.lastIndexOf(' ') + 1, -1);
    searchDocuments.push({
      id: distractorId(entity, relation),
      title: doc.title,
      text: `The old ${relation} of ${doc.title} was ${wrongValue(kb, relation, value, random)}.`,
    });
  }
  return { kb, searchDocuments, atlasDocuments };
}
