import type { Random } from '../../../foundations/models/random';
import type { CorpusContext } from './corpusContext';
import { encodeSegments, type CorpusEpisode, type Segment, type Skill } from './episode';
import { maybeFiller, paragraph } from './text';
import {
  anyValue,
  between,
  chance,
  codeValue,
  dateValue,
  decimalValue,
  emailValue,
  integerValue,
  nameValue,
  phraseValue,
  pick,
  wordValue,
  type CorpusValue,
} from './values';
import { ADJECTIVES, FIELD_WORDS, NOUNS } from './words';

/**
 * Plain-text episodes (no chat template): copying spans verbatim, copying a value when its
 * context comes round again (induction), looking a value up in a record, and ordinary prose.
 */

export type CopyFocus = 'number' | 'name' | 'string' | 'span';

export function skillOf(value: CorpusValue): Skill {
  if (value.kind === 'integer' || value.kind === 'decimal') return 'number';
  if (value.kind === 'name') return 'name';
  return 'string';
}

/** A span of random ASCII tokens: text no grammar predicts, so only copying gets it right. */
function randomSpan(context: CorpusContext, random: Random): string {
  const n = between(random, 2, 6);
  const ids = Array.from({ length: n }, () => pick(random, context.asciiTokens));
  return context.tokenizer.decode(ids).replace(/\s+/g, ' ');
}

function valueFor(random: Random, focus: CopyFocus | undefined): CorpusValue {
  switch (focus) {
    case 'number':
      return chance(random, 0.55) ? integerValue(random) : decimalValue(random);
    case 'name':
      return nameValue(random);
    case 'string':
      return pick(random, [phraseValue, codeValue, dateValue, emailValue, wordValue])(random);
    default:
      return anyValue(random);
  }
}

/** One item of a repeated sequence: a value or a random span, with its skill. */
function item(context: CorpusContext, random: Random, focus: CopyFocus | undefined): { text: string; skill: Skill } {
  if (focus === 'span' || (focus === undefined && chance(random, 0.25)))
    return { text: randomSpan(context, random), skill: 'span' };
  const value = valueFor(random, focus);
  const quoted = (value.kind === 'phrase' || value.kind === 'word') && chance(random, 0.5);
  return { text: quoted ? `"${value.text}"` : value.text, skill: skillOf(value) };
}

/** A sequence of items, then a marker, then the same sequence again (the copy is the target). */
export function repeatEpisode(context: CorpusContext, random: Random, focus?: CopyFocus): CorpusEpisode {
  const items = Array.from({ length: focus ? between(random, 1, 4) : between(random, 3, 10) }, () =>
    item(context, random, focus),
  );
  const separator = pick(random, [' ', ', ', '; ', '\n', ' | ']);
  const marker = pick(random, ['\nAgain: ', '\n---\n', ' || ', '\nRepeat: ', '\nCopy: ', '\n\n', ' => ']);
  const segments: Segment[] = [{ text: maybeFiller(random, 0.3), role: 'text' }];
  const line = (role: 'text' | 'target') =>
    items.forEach((it, i) => {
      if (i > 0) segments.push({ text: separator, role });
      segments.push({ text: it.text, role, ...(role === 'target' ? { skill: it.skill } : {}) });
    });
  line('text');
  segments.push({ text: marker, role: 'text' });
  line('target');
  segments.push({ text: pick(random, ['\n', '.', '']), role: 'text' });
  return encodeSegments(context.tokenizer, 'repeat', segments);
}

/** A value introduced with a phrase, prose, then the same phrase again: the value is the target. */
export function inductionEpisode(context: CorpusContext, random: Random, focus?: CopyFocus): CorpusEpisode {
  const value =
    focus === 'span'
      ? { text: randomSpan(context, random), skill: 'span' as Skill }
      : (() => {
          const v = valueFor(random, focus);
          return { text: v.text, skill: skillOf(v) };
        })();
  const anchor = `the ${pick(random, ADJECTIVES)} ${pick(random, NOUNS)} ${pick(random, FIELD_WORDS)}`;
  const intro = pick(random, [
    `Note that ${anchor} is `,
    `Remember: ${anchor} is `,
    `We were told ${anchor} is `,
    `${anchor[0].toUpperCase()}${anchor.slice(1)}: `,
  ]);
  const again = pick(random, [
    `As noted, ${anchor} is `,
    `So ${anchor} is `,
    `Again, ${anchor} is `,
    `Check: ${anchor}: `,
  ]);
  return encodeSegments(context.tokenizer, 'induction', [
    { text: maybeFiller(random, 0.4) + intro, role: 'text' },
    { text: value.text, role: 'text' },
    { text: '. ' + paragraph(random, between(random, 1, 3)) + '\n' + again, role: 'text' },
    { text: value.text, role: 'target', skill: value.skill },
    { text: '.', role: 'text' },
  ]);
}

/** Field names, distinct, some of two words (`due date` / `due_date`). */
export function fieldNames(random: Random, n: number): string[] {
  const names = new Set<string>();
  while (names.size < n)
    names.add(
      chance(random, 0.3) ? `${pick(random, FIELD_WORDS)} ${pick(random, FIELD_WORDS)}` : pick(random, FIELD_WORDS),
    );
  return [...names];
}

/** A record in one of several layouts, then a question about one field: its value is the target. */
export function lookupEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const fields = fieldNames(random, between(random, 2, 6));
  const values = fields.map(() => anyValue(random));
  const subject = chance(random, 0.5) ? nameValue(random).text : `${pick(random, NOUNS)} ${codeValue(random).text}`;
  const layout = random.nextInt(4);
  const key = (f: string) => (layout === 1 ? f.replace(/ /g, '_') : f);
  let record: string;
  if (layout === 0) record = `${subject}\n` + fields.map((f, i) => `${f}: ${values[i].text}`).join('\n');
  else if (layout === 1)
    record = JSON.stringify(
      Object.fromEntries([['subject', subject], ...fields.map((f, i) => [key(f), values[i].json])]),
    );
  else if (layout === 2)
    record = `| ${['subject', ...fields].join(' | ')} |\n| ${[subject, ...values.map((v) => v.text)].join(' | ')} |`;
  else record = `${subject} has ` + fields.map((f, i) => `${f} ${values[i].text}`).join(', ') + '.';
  const j = random.nextInt(fields.length);
  const question = pick(random, [
    `\nWhat is the ${fields[j]}? `,
    `\nThe ${fields[j]} of ${subject} is `,
    `\n${key(fields[j])} = `,
    `\nQ: ${fields[j]}?\nA: `,
  ]);
  return encodeSegments(context.tokenizer, 'lookup', [
    { text: maybeFiller(random, 0.3) + record + question, role: 'text' },
    { text: values[j].text, role: 'target', skill: 'lookup' },
    { text: pick(random, ['.', '\n', '']), role: 'text' },
  ]);
}

export function proseEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  return encodeSegments(context.tokenizer, 'prose', [{ text: paragraph(random, between(random, 3, 8)), role: 'text' }]);
}
