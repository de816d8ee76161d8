import type { Random } from '../../../foundations/models/random';
import { ENUM_WORDS, NAME_CODAS, NAME_ONSETS, NAME_VOWELS, NOUNS } from './words';

/**
 * The values a pretrained agent must copy exactly: numbers of any length (integers, decimals,
 * negatives), made-up multi-token names, quoted strings, codes, dates, and random spans of
 * tokens. Each value has its text (as a person writes it) and its JSON (as a tool call carries it).
 */
export type ValueKind =
  'integer' | 'decimal' | 'name' | 'word' | 'code' | 'date' | 'email' | 'phrase' | 'boolean' | 'enum';

export interface CorpusValue {
  kind: ValueKind;
  /** How it appears in prose. */
  text: string;
  /** How it appears in JSON (tool arguments and results). */
  json: string | number | boolean;
}

export const pick = <T>(random: Random, items: readonly T[]): T => items[random.nextInt(items.length)];
export const between = (random: Random, low: number, high: number): number => low + random.nextInt(high - low + 1);
export const chance = (random: Random, p: number): boolean => random.nextFloat() < p;

/** Digits of a whole number with `digits` digits (no leading zero unless it is one digit). */
function digitsOf(random: Random, digits: number): string {
  let s = digits === 1 ? String(random.nextInt(10)) : String(1 + random.nextInt(9));
  for (let i = 1; i < digits; i++) s += String(random.nextInt(10));
  return s;
}

/** Lengths skew short (as in text) but reach 12 digits. */
function digitCount(random: Random): number {
  const r = random.nextFloat();
  if (r < 0.2) return between(random, 1, 2);
  if (r < 0.65) return between(random, 3, 5);
  if (r < 0.9) return between(random, 6, 8);
  return between(random, 9, 12);
}

export function integerValue(random: Random, options: { negative?: number; digits?: number } = {}): CorpusValue {
  const digits = options.digits ?? digitCount(random);
  const text = (chance(random, options.negative ?? 0.15) ? '-' : '') + digitsOf(random, Math.min(digits, 15));
  const json = Number(text);
  return { kind: 'integer', text: String(json), json };
}

export function decimalValue(random: Random, options: { negative?: number } = {}): CorpusValue {
  const whole = digitsOf(random, between(random, 1, 6));
  let fraction = digitsOf(random, between(random, 1, 4));
  fraction = fraction.replace(/(?<!0)0+$/, '') || String(1 + random.nextInt(9));
  const text = (chance(random, options.negative ?? 0.15) ? '-' : '') + whole + '.' + fraction;
  const json = Number(text);
  return { kind: 'decimal', text: String(json), json };
}

export function numberValue(random: Random): CorpusValue {
  return chance(random, 0.6) ? integerValue(random) : decimalValue(random);
}

function syllable(random: Random): string {
  return pick(random, NAME_ONSETS) + pick(random, NAME_VOWELS) + pick(random, NAME_CODAS);
}

/** A made-up word of 2–3 syllables, capitalised: new to every tokenizer, so several tokens. */
export function madeUpWord(random: Random, syllables = between(random, 2, 3)): string {
  let w = '';
  for (let i = 0; i < syllables; i++) w += syllable(random);
  return w[0].toUpperCase() + w.slice(1);
}

/** A person's or a place's made-up name: one or two words. */
export function nameValue(random: Random, words = chance(random, 0.65) ? 2 : 1): CorpusValue {
  const text = Array.from({ length: words }, () => madeUpWord(random)).join(' ');
  return { kind: 'name', text, json: text };
}

export function codeValue(random: Random): CorpusValue {
  const letters = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
  const prefix = Array.from({ length: between(random, 1, 3) }, () => pick(random, [...letters])).join('');
  const text = `${prefix}-${digitsOf(random, between(random, 3, 6))}`;
  return { kind: 'code', text, json: text };
}

export function dateValue(random: Random): CorpusValue {
  const text = `${between(random, 1990, 2039)}-${String(between(random, 1, 12)).padStart(2, '0')}-${String(between(random, 1, 28)).padStart(2, '0')}`;
  return { kind: 'date', text, json: text };
}

export function emailValue(random: Random): CorpusValue {
  const text = `${madeUpWord(random, 2).toLowerCase()}.${madeUpWord(random, 2).toLowerCase()}@${madeUpWord(random, 2).toLowerCase()}.${pick(random, ['com', 'org', 'net', 'io'])}`;
  return { kind: 'email', text, json: text };
}

/** A short quoted phrase: a few ordinary or made-up words. */
export function phraseValue(random: Random): CorpusValue {
  const words = Array.from({ length: between(random, 2, 5) }, () =>
    chance(random, 0.25) ? madeUpWord(random, 2).toLowerCase() : pick(random, NOUNS),
  );
  const text = words.join(' ');
  return { kind: 'phrase', text, json: text };
}

export function wordValue(random: Random): CorpusValue {
  const text = pick(random, NOUNS);
  return { kind: 'word', text, json: text };
}

export function booleanValue(random: Random): CorpusValue {
  const v = chance(random, 0.5);
  return { kind: 'boolean', text: v ? 'yes' : 'no', json: v };
}

export function enumValue(random: Random, options: readonly string[] = ENUM_WORDS): CorpusValue {
  const text = pick(random, options);
  return { kind: 'enum', text, json: text };
}

/** Any value a record or a tool result might hold. */
export function anyValue(random: Random): CorpusValue {
  const r = random.nextFloat();
  if (r < 0.22) return integerValue(random);
  if (r < 0.4) return decimalValue(random);
  if (r < 0.6) return nameValue(random);
  if (r < 0.7) return codeValue(random);
  if (r < 0.77) return dateValue(random);
  if (r < 0.82) return emailValue(random);
  if (r < 0.92) return phraseValue(random);
  return wordValue(random);
}

/** JSON text of a value, as `JSON.stringify` (and so the chat template's `tojson`) writes it. */
export function jsonText(value: CorpusValue): string {
  return JSON.stringify(value.json);
}
