/**
 * A fictional knowledge base, generated from a seed: countries, cities, organisations and
 * people with names of several words ("William Harlow", "Bluefin Labs", "Port Veyra"), and one
 * short document per fact ("William Harlow works for Bluefin Labs."). The relations are random,
 * so a model cannot know the answers and has to search for them — the point of the example (a
 * CPU-sized version of the multi-hop QA tasks Agent-R1 trains on).
 *
 *   person        home (the city they were born in), company (an organisation), job
 *   organisation  location (a city), owner (the person who founded it), year (opened)
 *   city          country
 *
 * The example starts from the pretrained base (rollout-studio:base), which can copy a name of
 * any length from wherever it appears, so names, questions and queries read like ordinary ones.
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
  /** Draws the names (which names the entities get) and the relations between them. */
  seed: number;
  /** Redraws the relations only, keeping the names `seed` drew: another world with the same cast. */
  relationSeed?: number | undefined;
  /** The names to draw from and how a document states a fact (default: this example's ordinary ones). */
  style?: KnowledgeBaseStyle | undefined;
  countries: number;
  cities: number;
  organisations: number;
  people: number;
}

/** The names a world draws from, and the sentence of each fact document. */
export interface KnowledgeBaseStyle {
  names: {
    people: readonly string[];
    cities: readonly string[];
    countries: readonly string[];
    organisations: readonly string[];
  };
  sentence: (relation: Relation, subject: string, value: string) => string;
}

/** The knowledge base the example's search tool serves and its datasets are generated from. */
export const KB_OPTIONS: KnowledgeBaseOptions = {
  seed: 20251130,
  countries: 5,
  cities: 10,
  organisations: 10,
  people: 20,
};

const PERSON_NAMES = [
  'William Harlow',
  'Maria Okafor',
  'Jonas Lindqvist',
  'Priya Castellano',
  'Tomasz Brennan',
  'Aiko Moreau',
  'Nadia Whitfield',
  'Samuel Adeyemi',
  'Elena Kowalski',
  'Rafael Haddad',
  'Ingrid Vasquez',
  'Kofi Nakamura',
  'Lucia Petrov',
  'Hamid Ferreira',
  'Greta Oyelaran',
  'Mateo Larsen',
  'Yara Dubois',
  'Oskar Mendes',
  'Leila Sato',
  'Dmitri Quint',
];
const CITY_NAMES = [
  'Port Veyra',
  'Caldmoor',
  'New Ashby',
  'Lake Orren',
  'Brightwater',
  'Saint Ilse',
  'Dunmarrow',
  'Kestrel Bay',
  'Valderin',
  'Hollowmere',
  'East Tamsin',
  'Fenwick Falls',
];
const COUNTRY_NAMES = ['Estavia', 'Norland', 'Marovia', 'Quellan', 'Dravenia', 'Solvane', 'Tirrhen', 'Ostwyn'];
const ORGANISATION_NAMES = [
  'Bluefin Labs',
  'Harbor Analytics',
  'Cobalt Works',
  'Northwind Foundry',
  'Juniper Press',
  'Greyline Systems',
  'Amberfield Bank',
  'Silverleaf Observatory',
  'Redcliff Institute',
  'Orchid Robotics',
  'Tidewater Mills',
  'Larkspur Studios',
];
const PROFESSIONS = [
  'chemist',
  'painter',
  'engineer',
  'historian',
  'pilot',
  'architect',
  'botanist',
  'composer',
  'surgeon',
  'cartographer',
];
const ORG_KINDS = [
  'research laboratory',
  'manufacturing company',
  'research institute',
  'craft guild',
  'bank',
  'publishing house',
  'metal foundry',
  'observatory',
];
const FEATURES = [
  'its harbour',
  'its glassworks',
  'its old bridges',
  'its salt flats',
  'its clock tower',
  'its vineyards',
  'its river markets',
  'its libraries',
];

/** The relations a fact document can state. */
export const RELATIONS = ['home', 'company', 'job', 'location', 'owner', 'year', 'country'] as const;
export type Relation = (typeof RELATIONS)[number];

/** The id of the document stating `relation` of the entity `id`: `person-3/home`. */
export const factId = (id: string, relation: Relation) => `${id}/${relation}`;

/** How a document states each relation: an ordinary sentence. */
const SENTENCES: Record<Relation, (subject: string, value: string) => string> = {
  home: (s, v) => `${s} was born in ${v}.`,
  company: (s, v) => `${s} works for ${v}.`,
  job: (s, v) => `${s} is a ${v}.`,
  location: (s, v) => `${s} is based in ${v}.`,
  owner: (s, v) => `${s} was founded by ${v}.`,
  year: (s, v) => `${s} opened in ${v}.`,
  country: (s, v) => `${s} is a city in the country of ${v}.`,
};

/** The query a person would type for a fact: "who does William Harlow work for". */
const QUERIES: Record<Relation, (name: string) => string> = {
  home: (n) => `where was ${n} born`,
  company: (n) => `who does ${n} work for`,
  job: (n) => `what job does ${n} do`,
  location: (n) => `where is ${n} based`,
  owner: (n) => `who founded ${n}`,
  year: (n) => `when did ${n} open`,
  country: (n) => `which country is ${n} in`,
};
export const queryFor = (relation: Relation, name: string) => QUERIES[relation](name);

const ORDINARY_STYLE: KnowledgeBaseStyle = {
  names: { people: PERSON_NAMES, cities: CITY_NAMES, countries: COUNTRY_NAMES, organisations: ORGANISATION_NAMES },
  sentence: (relation, subject, value) => SENTENCES[relation](subject, value),
};

/** The first `count` names of a seeded shuffle of `names`. */
function drawNames(random: Random, names: readonly string[], count: number, what: string): string[] {
  if (count > names.length)
    throw new RangeError(`${count} ${what} asked for; there are ${names.length} names for them`);
  return random.shuffle([...names]).slice(0, count);
}

export function buildKnowledgeBase(options: KnowledgeBaseOptions = KB_OPTIONS): KnowledgeBase {
  const style = options.style ?? ORDINARY_STYLE;
  let random = Random.fromSeed(options.seed);
  const countryNames = drawNames(random, style.names.countries, options.countries, 'countries');
  const cityNames = drawNames(random, style.names.cities, options.cities, 'cities');
  const organisationNames = drawNames(random, style.names.organisations, options.organisations, 'organisations');
  const personNames = drawNames(random, style.names.people, options.people, 'people');
  const fact = (entity: { id: string; name: string }, relation: Relation, value: string): SearchDocument => ({
    id: factId(entity.id, relation),
    title: entity.name,
    text: style.sentence(relation, entity.name, value),
  });
  if (options.relationSeed !== undefined) random = Random.fromSeed(options.relationSeed);
  const pick = <T>(items: readonly T[]): T => items[random.nextInt(items.length)];

  // A city's feature, an organisation's kind and a country's capital are still drawn (so a seed
  // keeps giving the same world) but no fact states them: they are not part of any question.
  const countries: Country[] = Array.from({ length: options.countries }, (_, i) => ({
    id: `country-${i}`,
    name: countryNames[i],
    capital: '',
  }));
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
  const organisations: Organisation[] = Array.from({ length: options.organisations }, (_, i) => ({
    id: `org-${i}`,
    name: organisationNames[i],
    kind: pick(ORG_KINDS),
    city: cities[random.nextInt(cities.length)].id,
    founder: people[random.nextInt(people.length)].id,
    founded: 1850 + random.nextInt(170),
  }));
  for (const person of people) person.organisation = organisations[random.nextInt(organisations.length)].id;

  const byId = new Map<string, Country | City | Organisation | Person>(
    [...countries, ...cities, ...organisations, ...people].map((e) => [e.id, e]),
  );
  const name = (id: string) => byId.get(id)!.name;
  const documents: SearchDocument[] = [
    ...people.flatMap((p) => [
      fact(p, 'home', name(p.birthCity)),
      fact(p, 'company', name(p.organisation)),
      fact(p, 'job', p.profession),
    ]),
    ...organisations.flatMap((o) => [
      fact(o, 'location', name(o.city)),
      fact(o, 'owner', name(o.founder)),
      fact(o, 'year', String(o.founded)),
    ]),
    ...cities.map((c) => fact(c, 'country', name(c.country))),
  ];
  return { countries, cities, organisations, people, documents, byId };
}

/** Every name the example's worlds can use (for checks that other data holds none of them). */
export const ALL_NAMES: readonly string[] = [...PERSON_NAMES, ...CITY_NAMES, ...COUNTRY_NAMES, ...ORGANISATION_NAMES];
