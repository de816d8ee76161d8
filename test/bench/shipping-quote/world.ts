/**
 * The shipping-quote world: twelve cities, a distance for every pair (made up, fixed: a hash of
 * the pair), and a price list (a base fee plus a rate per kilogram-kilometre). Nothing here is in
 * an example or in the pretraining corpus.
 */
export const CITIES = [
  'Oslo',
  'Lima',
  'Cairo',
  'Perth',
  'Dakar',
  'Quito',
  'Hanoi',
  'Minsk',
  'Tunis',
  'Sofia',
  'Accra',
  'Dhaka',
] as const;
export type City = (typeof CITIES)[number];

/** Kilometres between two cities: 300–8,999, the same both ways. */
export function distanceKm(a: City, b: City): number {
  if (a === b) return 0;
  const [x, y] = [a, b].sort();
  let h = 2166136261;
  for (const c of `${x}|${y}`) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return 300 + (h % 8700);
}

/** The price of a parcel: 4.50 plus 0.0021 per kilogram-kilometre, to the cent. */
export function shippingCost(weightKg: number, distance: number): string {
  return (4.5 + Math.round(weightKg * distance * 0.21) / 100).toFixed(2);
}

/** Every unordered pair of distinct cities, in a fixed order. */
export function cityPairs(): [City, City][] {
  const pairs: [City, City][] = [];
  CITIES.forEach((a, i) => CITIES.slice(i + 1).forEach((b) => pairs.push([a, b])));
  return pairs;
}
