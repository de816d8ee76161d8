/**
 * Data of the shipping-quote task. A question names a weight and two cities; the answer needs
 * two calls in a chain — the distance, then the price for that weight over that distance — and
 * the price read back. Held-out questions lie outside the training range twice over: city pairs
 * no training question or demonstration uses, and heavier parcels (31–99 kg against 1–30 kg).
 *
 * Demonstrations are from a careless agent, so RL has something to fix that SFT imitates: most
 * (`round`, 65 %) pass the distance rounded to hundreds into the price call, some (`botch`, 10 %)
 * mistype the weight, the rest (`correct`) copy both exactly.
 */
import * as path from 'node:path';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { cityPairs, distanceKm, shippingCost, type City } from './world';

export const SYSTEM_PROMPT =
  'Find the distance with the distance tool, price the parcel with the shipping_cost tool, then reply with <answer>the price</answer>.';

export interface QuoteRow {
  id: string;
  system: string;
  prompt: string;
  answer: string;
  weight: number;
  origin: City;
  destination: City;
}

const TEMPLATES = [
  (w: string, a: string, b: string) => `What does it cost to ship a ${w} kg parcel from ${a} to ${b}?`,
  (w: string, a: string, b: string) => `Price a ${w} kg package going from ${a} to ${b}.`,
  (w: string, a: string, b: string) => `How much to send ${w} kg from ${a} to ${b}?`,
];

/** Pairs for training questions and demonstrations, and the pairs kept for the held-out set (every fourth). */
export function splitPairs(): { train: [City, City][]; heldout: [City, City][] } {
  const pairs = cityPairs();
  return { train: pairs.filter((_, i) => i % 4 !== 3), heldout: pairs.filter((_, i) => i % 4 === 3) };
}

function weight(random: Random, min: number, max: number): number {
  const whole = min + random.nextInt(max - min + 1);
  return random.nextFloat() < 0.5 ? whole : Number(`${whole}.${1 + random.nextInt(9)}`);
}

export function generateQuestions(options: {
  seed: number;
  count: number;
  prefix: string;
  pairs: readonly [City, City][];
  weights: [number, number];
  exclude?: ReadonlySet<string>;
}): QuoteRow[] {
  const random = Random.fromSeed(options.seed);
  const seen = new Set(options.exclude ?? []);
  const rows: QuoteRow[] = [];
  while (rows.length < options.count) {
    const pair = options.pairs[random.nextInt(options.pairs.length)];
    const [origin, destination] = random.nextFloat() < 0.5 ? pair : ([pair[1], pair[0]] as [City, City]);
    const w = weight(random, ...options.weights);
    const prompt = TEMPLATES[random.nextInt(TEMPLATES.length)](String(w), origin, destination);
    if (seen.has(prompt)) continue;
    seen.add(prompt);
    const answer = shippingCost(w, distanceKm(origin, destination));
    rows.push({
      id: `${options.prefix}-${String(rows.length).padStart(4, '0')}`,
      system: SYSTEM_PROMPT,
      prompt,
      answer,
      weight: w,
      origin,
      destination,
    });
  }
  return rows;
}

const call = (name: string, args: Record<string, unknown>): ChatMessage => ({
  role: 'assistant',
  content: '',
  tool_calls: [{ type: 'function', function: { name, arguments: args } }],
});

export function generateDemonstrations(
  rows: readonly QuoteRow[],
  options: { seed: number; round: number; botch: number },
): { id: string; kind: string; messages: ChatMessage[] }[] {
  const random = Random.fromSeed(options.seed);
  return rows.map((row, i) => {
    const roll = random.nextFloat();
    const kind = roll < options.round ? 'round' : roll < options.round + options.botch ? 'botch' : 'correct';
    const km = distanceKm(row.origin, row.destination);
    const passedKm = kind === 'round' ? Math.round(km / 100) * 100 : km;
    const passedWeight = kind === 'botch' ? row.weight + 1 + random.nextInt(9) : row.weight;
    const price = shippingCost(passedWeight, passedKm);
    const messages: ChatMessage[] = [
      { role: 'system', content: row.system },
      { role: 'user', content: row.prompt },
      call('distance', { origin: row.origin, destination: row.destination }),
      { role: 'tool', name: 'distance', content: `${km} km` },
      call('shipping_cost', { weight_kg: passedWeight, distance_km: passedKm }),
      { role: 'tool', name: 'shipping_cost', content: `${price} EUR` },
      { role: 'assistant', content: `<answer>${price}</answer>` },
    ];
    return { id: `sft-${String(i).padStart(4, '0')}`, kind, messages };
  });
}

export const DEFAULTS = { seed: 1, train: 400, heldout: 100, sft: 300, round: 0.65, botch: 0.1 };

export function generateDataset(options: typeof DEFAULTS & { out: string }): void {
  const { train: trainPairs, heldout: heldoutPairs } = splitPairs();
  const train = generateQuestions({
    seed: options.seed,
    count: options.train,
    prefix: 'train',
    pairs: trainPairs,
    weights: [1, 30],
  });
  const heldout = generateQuestions({
    seed: options.seed + 1,
    count: options.heldout,
    prefix: 'heldout',
    pairs: heldoutPairs,
    weights: [31, 99],
  });
  const demoQuestions = generateQuestions({
    seed: options.seed + 2,
    count: options.sft,
    prefix: 'demo',
    pairs: trainPairs,
    weights: [1, 30],
    exclude: new Set(train.map((r) => r.prompt)),
  });
  writeJsonl(path.join(options.out, 'train.jsonl'), train);
  writeJsonl(path.join(options.out, 'heldout.jsonl'), heldout);
  writeJsonl(
    path.join(options.out, 'sft.jsonl'),
    generateDemonstrations(demoQuestions, { seed: options.seed + 3, round: options.round, botch: options.botch }),
  );
}
