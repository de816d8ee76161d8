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
export const KB_OPTIONS: KnowledgeBaseOptions = { seed: 20251130, countries: 8, cities: 24, organisations: 40, people: 400 };

const ONSETS = ['b', 'br', 'c', 'd', 'dr', 'f', 'g', 'gr', 'h', 'k', 'l', 'm', 'n', 'p', 'qu', 'r', 's', 'st', 't', 'tr', 'v', 'w', 'z'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'o', 'ai', 'ou'];
const CODAS = ['', '', '', 'n', 'r', 'l', 's', 'th', 'nd', 'rk', 'm'];
const PROFESSIONS = ['chemist', 'painter', 'engineer', 'historian', 'pilot', 'architect', 'botanist', 'composer', 'surgeon', 'cartographer'];
const ORG_KINDS = [
  ['Labs', 'research laboratory'],
  ['Works', 'manufacturing company'],
  ['Institute', 'research institute'],
  ['Guild', 'craft guild'],
  ['Bank', 'bank'],
  ['Press', 'publishing house'],
  ['Foundry', 'metal foundry'],
  ['Observatory', 'observatory'],
] as const;
const FEATURES = ['its harbour', 'its glassworks', 'its old bridges', 'its salt flats', 'its clock tower', 'its vineyards', 'its river markets', 'its libraries'];

function capitalise(word: string): string {
  return word[0].toUpperCase() + word.slice(1);
}

/** "a chemist", "an engineer". */
function withArticle(word: string): string {
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

/** A made-up word of 2–3 syllables, never one already used. */
function inventName(random: Random, used: Set<string>, syllables: [number, number] = [2, 3]): string {
  for (;;) {
    const count = syllables[0] + random.nextInt(syllables[1] - syllables[0] + 1);
    let word = '';
    for (let i = 0; i < count; i++) {
      word += ONSETS[random.nextInt(ONSETS.length)] + VOWELS[random.nextInt(VOWELS.length)];
      if (i === count - 1) word += CODAS[random.nextInt(CODAS.length)];
    }
    const name = capitalise(word);
    if (!used.has(name.toLowerCase())) {
      used.add(name.toLowerCase());
      return name;
    }
  }
}

export function buildKnowledgeBase(options: KnowledgeBaseOptions = KB_OPTIONS): KnowledgeBase {
  const random = Random.fromSeed(options.seed);
  const used = new Set<string>();
  const pick = <T>(items: readonly T[]): T => items[random.nextInt(items.length)];

  const countries: Country[] = Array.from({ length: options.countries }, (_, i) => ({ id: `country-${i}`, name: inventName(random, used, [2, 2]) + 'ia', capital: '' }));
  const cities: City[] = Array.from({ length: options.cities }, (_, i) => ({
    id: `city-${i}`,
    name: inventName(random, used, [2, 2]),
    // Every country gets a city first, so every country has a capital.
    country: countries[i < countries.length ? i : random.nextInt(countries.length)].id,
    feature: pick(FEATURES),
  }));
  for (const country of countries) country.capital = cities.find((c) => c.country === country.id)!.id;

  const people: Person[] = Array.from({ length: options.people }, (_, i) => ({
    id: `person-${i}`,
    name: `${inventName(random, used, [2, 2])} ${inventName(random, used, [2, 2])}`,
    profession: pick(PROFESSIONS),
    birthCity: cities[random.nextInt(cities.length)].id,
    organisation: '',
  }));
  const organisations: Organisation[] = Array.from({ length: options.organisations }, (_, i) => {
    const [suffix, kind] = pick(ORG_KINDS);
    return {
      id: `org-${i}`,
      name: `${inventName(random, used, [2, 2])} ${suffix}`,
      kind,
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
