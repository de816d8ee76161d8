import type { Random } from '../../../foundations/models/random';
import {
  between,
  chance,
  dateValue,
  integerValue,
  madeUpWord,
  nameValue,
  numberValue,
  phraseValue,
  pick,
} from './values';
import { ADJECTIVES, ADVERBS, NOUNS, PAST_VERBS, SUBJECT_PRONOUNS } from './words';

/**
 * General prose from a small grammar: sentences about made-up people and ordinary things, with
 * numbers, dates and names in passing. It keeps the model a language model of English-like
 * text; the copy skills come from the episodes that use it as filler.
 */

const capitalise = (s: string) => s[0].toUpperCase() + s.slice(1);
const article = (word: string) => (/^[aeiou]/.test(word) ? 'an' : 'a');

function nounPhrase(random: Random): string {
  const r = random.nextFloat();
  if (r < 0.3) return `the ${pick(random, ADJECTIVES)} ${pick(random, NOUNS)}`;
  if (r < 0.5) {
    const adjective = pick(random, ADJECTIVES);
    return `${article(adjective)} ${adjective} ${pick(random, NOUNS)}`;
  }
  if (r < 0.65) return `the ${pick(random, NOUNS)} of the ${pick(random, NOUNS)}`;
  if (r < 0.85)
    return `${integerValue(random, { negative: 0, digits: between(random, 1, 3) }).text} ${pick(random, NOUNS)}s`;
  return nameValue(random).text;
}

function subject(random: Random): string {
  const r = random.nextFloat();
  if (r < 0.35) return nameValue(random).text;
  if (r < 0.55) return pick(random, SUBJECT_PRONOUNS);
  return nounPhrase(random);
}

function adjunct(random: Random): string {
  const r = random.nextFloat();
  if (r < 0.35) return '';
  if (r < 0.5) return ` in the ${pick(random, NOUNS)}`;
  if (r < 0.6) return ` on ${dateValue(random).text}`;
  if (r < 0.7) return ` with ${nameValue(random).text}`;
  if (r < 0.8) return ` after ${integerValue(random, { negative: 0, digits: between(random, 1, 2) }).text} days`;
  if (r < 0.9) return ` near ${madeUpWord(random)}`;
  return ` ${pick(random, ADVERBS)}`;
}

export function sentence(random: Random): string {
  const r = random.nextFloat();
  let s: string;
  if (r < 0.6) s = `${subject(random)} ${pick(random, PAST_VERBS)} ${nounPhrase(random)}${adjunct(random)}.`;
  else if (r < 0.75) s = `${capitalise(nounPhrase(random))} was ${pick(random, ADJECTIVES)}${adjunct(random)}.`;
  else if (r < 0.85)
    s = `The ${pick(random, NOUNS)} cost ${numberValue(random).text.replace(/^-/, '')} and ${pick(random, PAST_VERBS)} ${pick(random, ADVERBS)}.`;
  else
    s = `"${capitalise(phraseValue(random).text)}," ${pick(random, ['said', 'wrote', 'asked'])} ${nameValue(random).text}.`;
  return capitalise(s);
}

export function paragraph(random: Random, sentences = between(random, 2, 5)): string {
  return Array.from({ length: sentences }, () => sentence(random)).join(' ');
}

/** Empty, or a paragraph followed by a blank line: filler before or between the parts of an episode. */
export function maybeFiller(random: Random, p = 0.5): string {
  return chance(random, p) ? `${paragraph(random, between(random, 1, 3))}\n\n` : '';
}
