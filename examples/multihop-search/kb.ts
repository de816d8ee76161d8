/**
 * A fictional knowledge base, generated from a seed: countries, cities, organisations and
 * people, and one short document per fact ("The owner of Dragon is Mark."). The relations are
 * random, so a model cannot know the answers and has to search for them — the point of the
 * benchmark (a CPU-sized version of the multi-hop QA tasks Agent-R1 trains on).
 *
 *   person        home (the city they come from), company (an organisation), job
 *   organisation  location (a city), owner (a person), year (founded)
 *   city          country
 *
 * Each relation is one word that the demo's tokenizer reads as one token, with or without a
 * space before it, so every query `<relation> of <name>` has the same shape.
 */
import { Random, type SearchDocument } from 'rollout-studio';

export interface Country {
  id: string;
  name: string;
  capital: string;
}
export interface City {
  id: string;
  name: string;
  country: string;
  feature: string;
}
export interface Organisation {
  id: string;
  name: string;
  kind: string;
  city: string;
  founder: string;
  founded: number;
}
export interface Person {
  id: string;
  name: string;
  profession: string;
  birthCity: string;
  organisation: string;
}

export interface KnowledgeBase {
  countries: Country[];
  cities: City[];
  organisations: Organisation[];
  people: Person[];
  /** One document per fact; its id is `factId(entity, relation)`. */
  documents: SearchDocument[];
  /** Any entity by id. */
  byId: Map<string, Country | City | Organisation | Person>;
}

export interface KnowledgeBaseOptions {
  /** Draws the names (which words name which entities) and the relations between them. */
  seed: number;
  /** Redraws the relations only, keeping the names `seed` drew: another world with the same cast. */
  relationSeed?: number;
  countries: number;
  cities: number;
  organisations: number;
  people: number;
}

/** The knowledge base the example's search tool serves and its datasets are generated from. */
export const KB_OPTIONS: KnowledgeBaseOptions = { seed: 20251130, countries: 5, cities: 10, organisations: 10, people: 20 };

/*
 * Every name is one common English word that the tiny model's tokenizer (Qwen3's, cut to 16,000
 * merges by `npm run demo`) reads as a single token after a space, and every question, query and
 * fact puts the name it is about last: "… the company of Mark?", {"query": "company of Mark"},
 * "The company of Mark is Dragon." So the name an agent must write next is always the most
 * recent name it has read — a copy a model of three million parameters learns in minutes,
 * where finding a name in the middle of a paragraph needs circuits it does not form in that
 * time. The world is still fictional: the words are names of made-up things and their
 * relations are random, so no fact here can be known without searching.
 * (test/unit/examples/multihopSearch.test.ts checks the single-token property.)
 */
const PERSON_NAMES = [
  'Adam', 'Alex', 'Andrew', 'Bill', 'Carol', 'Charles', 'Chris', 'Daniel', 'David', 'Eric', 'Frank',
  'George', 'Greg', 'Harry', 'Jack', 'James', 'Jeff', 'John', 'Joseph', 'Louis', 'Mark', 'Martin',
  'Mary', 'Matt', 'Michael', 'Mike', 'Nick', 'Paul', 'Peter', 'Richard', 'Robert', 'Ryan', 'Scott',
  'Steve', 'Thomas', 'William', 'Jackson', 'Johnson', 'Jones', 'Smith', 'Williams', 'Brown', 'Jose', 'Stan',
];
const CITY_NAMES = [
  'Stone', 'River', 'Valley', 'Lake', 'Hill', 'Brook', 'Field', 'Wood', 'Mount', 'Rock', 'Spring', 'Sand',
  'Island', 'Beach', 'Coast', 'Park', 'Mill', 'Port', 'Point', 'Fort', 'Camp', 'Tree', 'Water', 'Square',
];
const COUNTRY_NAMES = ['North', 'South', 'East', 'West', 'Silver', 'Gold', 'Green', 'White'];
const ORGANISATION_NAMES = [
  'Dragon', 'Magic', 'Fire', 'Energy', 'Power', 'Ball', 'Block', 'Board', 'Book', 'Card', 'Cloud', 'Code',
  'Core', 'Cross', 'Data', 'Digital', 'Drive', 'Engine', 'Force', 'Future', 'Global', 'Graph', 'Grid',
  'Guard', 'Machine', 'Master', 'Matrix', 'Media', 'Model', 'Music', 'Network', 'Quest', 'Radio', 'Science',
  'Secret', 'Smart', 'Sound', 'Space', 'Speed', 'Steel', 'Stream', 'Super', 'Vector', 'Video', 'World',
];
const PROFESSIONS = ['chemist', 'painter', 'engineer', 'historian', 'pilot', 'architect', 'botanist', 'composer', 'surgeon', 'cartographer'];
const ORG_KINDS = ['research laboratory', 'manufacturing company', 'research institute', 'craft guild', 'bank', 'publishing house', 'metal foundry', 'observatory'];
const FEATURES = ['its harbour', 'its glassworks', 'its old bridges', 'its salt flats', 'its clock tower', 'its vineyards', 'its river markets', 'its libraries'];

/** The relations a fact document can state, as the words its sentence and a query use. */
export const RELATIONS = ['home', 'company', 'job', 'location', 'owner', 'year', 'country'] as const;
export type Relation = (typeof RELATIONS)[number];

/** The id of the document stating `relation` of the entity `id`: `person-3/home`. */
export const factId = (id: string, relation: Relation) => `${id}/${relation}`;

/**
 * One fact, one document: "The company of Mark is Dragon." The value comes last, so the name a
 * search brings up is always the last word of its result (see the note on names below).
 */
function fact(entity: { id: string; name: string }, relation: Relation, value: string): SearchDocument {
  return { id: factId(entity.id, relation), title: entity.name, text: `The ${relation} of ${entity.name} is ${value}.` };
}

/** The first `count` names of a seeded shuffle of `names`. */
function drawNames(random: Random, names: readonly string[], count: number, what: string): string[] {
  if (count > names.length) throw new RangeError(`${count} ${what} asked for; there are ${names.length} names for them`);
  return random.shuffle([...names]).slice(0, count);
}

export function buildKnowledgeBase(options: KnowledgeBaseOptions = KB_OPTIONS): KnowledgeBase {
  let random = Random.fromSeed(options.seed);
  const countryNames = drawNames(random, COUNTRY_NAMES, options.countries, 'countries');
  const cityNames = drawNames(random, CITY_NAMES, options.cities, 'cities');
  const organisationNames = drawNames(random, ORGANISATION_NAMES, options.organisations, 'organisations');
  const personNames = drawNames(random, PERSON_NAMES, options.people, 'people');
  if (options.relationSeed !== undefined) random = Random.fromSeed(options.relationSeed);
  const pick = <T>(items: readonly T[]): T => items[random.nextInt(items.length)];

  // A city's feature, an organisation's kind and a country's capital are still drawn (so a seed
  // keeps giving the same world) but no fact states them: they are not part of any question.
  const countries: Country[] = Array.from({ length: options.countries }, (_, i) => ({ id: `country-${i}`, name: countryNames[i], capital: '' }));
  const cities: City[] = Array.from({ length: options.cities }, (_, i) => ({
    id: `city-${i}`,
    name: cityNames[i],
    // Every country gets a city first, so every country has a capital.
    country: countries[i < countries.length ? i : random.nextInt(countries.length)].id,
    feature: pick(FEATURES),
  }));
  for (const country of countries) country.capital = cities.find((c) => c.country === country.id)!.id;

  const people: Person[] = Array.from({ length: options.people }, (_, i) => ({
    id: `person-${i}`,
    name: personNames[i],
    profession: pick(PROFESSIONS),
    birthCity: cities[random.nextInt(cities.length)].id,
    organisation: '',
  }));
  const organisations: Organisation[] = Array.from({ length: options.organisations }, (_, i) => {
    return {
      id: `org-${i}`,
      name: organisationNames[i],
      kind: pick(ORG_KINDS),
      city: cities[random.nextInt(cities.length)].id,
      founder: people[random.nextInt(people.length)].id,
      founded: 1850 + random.nextInt(170),
    };
  });
  for (const person of people) person.organisation = organisations[random.nextInt(organisations.length)].id;

  const byId = new Map<string, Country | City | Organisation | Person>([...countries, ...cities, ...organisations, ...people].map((e) => [e.id, e]));
  const name = (id: string) => byId.get(id)!.name;
  const documents: SearchDocument[] = [
    ...people.flatMap((p) => [fact(p, 'home', name(p.birthCity)), fact(p, 'company', name(p.organisation)), fact(p, 'job', p.profession)]),
    ...organisations.flatMap((o) => [fact(o, 'location', name(o.city)), fact(o, 'owner', name(o.founder)), fact(o, 'year', String(o.founded))]),
    ...cities.map((c) => fact(c, 'country', name(c.country))),
  ];
  return { countries, cities, organisations, people, documents, byId };
}
