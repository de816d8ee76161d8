/**
 * Units of the unit-conversion task: each with its dimension and its size in the dimension's
 * base unit (temperatures are affine). The names are what both the questions and the tool's
 * schema use.
 */
export interface Unit {
  name: string;
  dimension: 'length' | 'mass' | 'volume' | 'temperature';
  /** value in base units = value · scale + offset */
  scale: number;
  offset?: number;
}

export const UNITS: readonly Unit[] = [
  { name: 'meters', dimension: 'length', scale: 1 },
  { name: 'kilometers', dimension: 'length', scale: 1000 },
  { name: 'centimeters', dimension: 'length', scale: 0.01 },
  { name: 'inches', dimension: 'length', scale: 0.0254 },
  { name: 'feet', dimension: 'length', scale: 0.3048 },
  { name: 'miles', dimension: 'length', scale: 1609.344 },
  { name: 'grams', dimension: 'mass', scale: 1 },
  { name: 'kilograms', dimension: 'mass', scale: 1000 },
  { name: 'pounds', dimension: 'mass', scale: 453.59237 },
  { name: 'ounces', dimension: 'mass', scale: 28.349523125 },
  { name: 'liters', dimension: 'volume', scale: 1 },
  { name: 'milliliters', dimension: 'volume', scale: 0.001 },
  { name: 'gallons', dimension: 'volume', scale: 3.785411784 },
  { name: 'cups', dimension: 'volume', scale: 0.2365882365 },
  { name: 'celsius', dimension: 'temperature', scale: 1 },
  { name: 'fahrenheit', dimension: 'temperature', scale: 5 / 9, offset: -32 * (5 / 9) },
  { name: 'kelvin', dimension: 'temperature', scale: 1, offset: -273.15 },
];

export const UNIT_NAMES = UNITS.map((u) => u.name) as [string, ...string[]];

export class ConversionError extends Error {}

/** `value` in `from` expressed in `to`, rounded to 4 significant decimals as the tool reports it. */
export function convert(value: number, from: string, to: string): number {
  const a = UNITS.find((u) => u.name === from);
  const b = UNITS.find((u) => u.name === to);
  if (!a || !b) throw new ConversionError(`unknown unit ${!a ? from : to}`);
  if (a.dimension !== b.dimension)
    throw new ConversionError(`cannot convert ${a.dimension} (${from}) to ${b.dimension} (${to})`);
  const base = value * a.scale + (a.offset ?? 0);
  return round((base - (b.offset ?? 0)) / b.scale);
}

/** Two decimals for numbers above 1, four significant digits below: what a person reads. */
export function round(x: number): number {
  if (x === 0) return 0;
  const digits = Math.abs(x) >= 1 ? 2 : Math.min(10, 3 - Math.floor(Math.log10(Math.abs(x))));
  return Number(x.toFixed(digits));
}
