/**
 * A fictional knowledge base, generated from a seed: countries, cities, organisations and
 * people, each described by one short document that names its relations. Every name is made up
 * from syllables, so a model cannot know the answers and has to search for them — the point of
 * the benchmark (a CPU-sized version of the multi-hop QA tasks Agent-R1 trains on).
 *
 *   person        born in a city, works for an organisation, has a profession
 *   organisation  headquartered in a city, founded in a year by a person
 *   city          lies in a country, known for something
 *   country       has a capital city
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
  /** One document per entity; its id is the entity's id. */
  documents: SearchDocument[];
  /** Any entity by id. */
  byId: Map<string, Country | City | Organisation | Person>;
}

export interface KnowledgeBaseOptions {
  seed: number;
  countries: number;
  cities: number;
  organisations: number;
  people: number;
}

/** The knowledge base the example's search tool serves and its datasets are generated from. */
export const KB_OPTIONS: KnowledgeBaseOptions = { seed: 20251130, countries: 8, cities: 24, organisations: 40, people: 44 };

/*
 * Every name is one common English word that the tiny model's tokenizer (Qwen3's, cut to 16,000
 * merges by `npm run demo`) reads as a single token after a space. A model of three million
 * parameters learns to copy one token from a search result into its next query within minutes
 * of training; copying a name of three tokens needs an induction circuit it does not form in
 * that time. The world is still fictional: the words are used as names of made-up things, and
 * their relations are random, so no fact here can be known without searching.
 * (test/unit/examples/multihopKnowledgeBase.test.ts checks the single-token property.)
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

/** "a chemist", "an engineer". */
function withArticle(word: string): string {
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

/** The first `count` names of a seeded shuffle of `names`. */
function drawNames(random: Random, names: readonly string[], count: number, what: string): string[] {
  if (count > names.length) throw new RangeError(`${count} ${what} asked for; there are ${names.length} names for them`);
  return random.shuffle([...names]).slice(0, count);
}

export function buildKnowledgeBase(options: KnowledgeBaseOptions = KB_OPTIONS): KnowledgeBase {
  const random = Random.fromSeed(options.seed);
  const countryNames = drawNames(random, COUNTRY_NAMES, options.countries, 'countries');
  const cityNames = drawNames(random, CITY_NAMES, options.cities, 'cities');
  const organisationNames = drawNames(random, ORGANISATION_NAMES, options.organisations, 'organisations');
  const personNames = drawNames(random, PERSON_NAMES, options.people, 'people');
  const pick = <T>(items: readonly T[]): T => items[random.nextInt(items.length)];

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
    ...people.map((p) => ({
      id: p.id,
      title: p.name,
      text: `${p.name} is ${withArticle(p.profession)} born in ${name(p.birthCity)}. ${p.name} works for ${name(p.organisation)}.`,
    })),
    ...organisations.map((o) => ({
      id: o.id,
      title: o.name,
      text: `${o.name} is ${withArticle(o.kind)} headquartered in ${name(o.city)}. It was founded in ${o.founded} by ${name(o.founder)}.`,
    })),
    ...cities.map((c) => ({ id: c.id, title: c.name, text: `${c.name} is a city in ${name(c.country)}, known for ${c.feature}.` })),
    ...countries.map((c) => ({ id: c.id, title: c.name, text: `${c.name} is a country whose capital is ${name(c.capital)}.` })),
  ];
  return { countries, cities, organisations, people, documents, byId };
}
