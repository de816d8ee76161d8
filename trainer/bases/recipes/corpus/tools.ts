import { z } from 'zod';
import type { ToolSpec } from '../../../contract/protocol/chatMessages';
import { parametersJsonSchema } from '../../../foundations/tools/schema';
import type { Random } from '../../../foundations/models/random';
import {
  anyValue,
  between,
  booleanValue,
  chance,
  codeValue,
  dateValue,
  decimalValue,
  emailValue,
  enumValue,
  integerValue,
  madeUpWord,
  nameValue,
  phraseValue,
  pick,
  type CorpusValue,
} from './values';
import { ENUM_WORDS, FIELD_WORDS, TOOL_NOUNS, TOOL_VERBS } from './words';

/**
 * Random tools for the corpus: a name (`verb_noun`), a description, and parameters with random
 * names, types and descriptions, turned into the JSON Schema a chat template shows by the same
 * code that converts a user's zod schema (`parametersJsonSchema`). Each tool also knows the
 * fields its results carry. The tools only look things up — none computes, converts or
 * searches — so no example's tool is among them.
 */

export type ParamType = 'string' | 'integer' | 'number' | 'boolean' | 'enum';

export interface ParamDef {
  /** snake_case, as in the schema and the call. */
  name: string;
  /** The name as words, as a user mentions it. */
  words: string;
  type: ParamType;
  options?: string[];
  required: boolean;
  value(random: Random): CorpusValue;
}

export interface GeneratedTool {
  name: string;
  /** The verb and noun as a request phrases them ("look up", "invoice"). */
  verbWords: string;
  noun: string;
  description: string;
  params: ParamDef[];
  spec: ToolSpec;
}

const VERB_WORDS: Record<string, string> = { lookup: 'look up' };

/** What a field's name says about its values: `due_date` holds a date, `owner` a name. */
export function valueMakerFor(
  words: string,
  random: Random,
): { type: ParamType; value: (r: Random) => CorpusValue; options?: string[] } {
  const last = words.split(' ').at(-1)!;
  if (/^(id|code|number)$/.test(last))
    return chance(random, 0.5)
      ? { type: 'string', value: codeValue }
      : { type: 'integer', value: (r) => integerValue(r, { negative: 0, digits: between(r, 3, 9) }) };
  if (/^(name|owner|customer|user|member|driver|guest|author|artist|manager|doctor|team|city|region)$/.test(last))
    return { type: 'string', value: nameValue };
  if (/^(date|day|start|end|due)$/.test(last)) return { type: 'string', value: dateValue };
  if (/^(email)$/.test(last)) return { type: 'string', value: emailValue };
  if (/^(amount|price|total|balance|deposit|fee|discount|weight|height|width|depth|speed|rating|score)$/.test(last))
    return { type: 'number', value: (r) => (chance(r, 0.6) ? decimalValue(r) : integerValue(r)) };
  if (/^(count|quantity|limit|offset|seat|floor|row|port|capacity|level|version|build|gate|room|table)$/.test(last))
    return { type: 'integer', value: (r) => integerValue(r, { negative: 0.05 }) };
  if (/^(note|comment|reason|message|title|label|path|topic|tag)$/.test(last))
    return { type: 'string', value: phraseValue };
  if (/^(status|priority|mode|type|category|channel|color|size|language|zone)$/.test(last)) {
    const options = [...new Set(Array.from({ length: between(random, 2, 4) }, () => pick(random, ENUM_WORDS)))];
    return { type: 'enum', options, value: (r) => enumValue(r, options) };
  }
  return { type: 'string', value: anyValue };
}

function paramDescription(random: Random, words: string, noun: string): string {
  return pick(random, [
    `The ${words} of the ${noun}.`,
    `${words[0].toUpperCase()}${words.slice(1)} to use.`,
    `Which ${words}.`,
    `The ${noun}'s ${words}.`,
    `${words[0].toUpperCase()}${words.slice(1)}.`,
  ]);
}

function paramNames(random: Random, noun: string, n: number): string[] {
  const names = new Set<string>();
  while (names.size < n) {
    const r = random.nextFloat();
    if (r < 0.2) names.add(`${noun} ${pick(random, ['id', 'code', 'number', 'name', 'date', 'status'])}`);
    else if (r < 0.45) names.add(`${pick(random, FIELD_WORDS)} ${pick(random, FIELD_WORDS)}`);
    else if (r < 0.55) names.add(`${madeUpWord(random, 2).toLowerCase()} ${pick(random, FIELD_WORDS)}`);
    else if (r < 0.6) names.add(`include ${pick(random, FIELD_WORDS)}`);
    else names.add(pick(random, FIELD_WORDS));
  }
  return [...names];
}

export function generateTool(
  random: Random,
  taken: ReadonlySet<string> = new Set(),
  options: { params?: number; firstParam?: string } = {},
): GeneratedTool {
  let verb: string;
  let noun: string;
  do {
    verb = pick(random, TOOL_VERBS);
    noun = chance(random, 0.15) ? madeUpWord(random, 2).toLowerCase() : pick(random, TOOL_NOUNS);
  } while (taken.has(noun));
  const name = chance(random, 0.2) ? `${verb}_${noun}_${pick(random, FIELD_WORDS)}` : `${verb}_${noun}`;
  const verbWords = VERB_WORDS[verb] ?? verb;
  const names = paramNames(random, noun, options.params ?? between(random, 1, 4));
  if (options.firstParam && !names.includes(options.firstParam)) names[0] = options.firstParam;
  const params: ParamDef[] = names.map((words, i) => {
    const maker = words.startsWith('include ')
      ? { type: 'boolean' as const, value: booleanValue }
      : valueMakerFor(words, random);
    return {
      name: words.replace(/ /g, '_'),
      words,
      type: maker.type,
      ...(maker.options ? { options: maker.options } : {}),
      required: i === 0 || chance(random, 0.6),
      value: maker.value,
    };
  });
  const description = pick(random, [
    `${verbWords[0].toUpperCase()}${verbWords.slice(1)} a ${noun}.`,
    `${verbWords[0].toUpperCase()}${verbWords.slice(1)} the ${noun} with the given details and return it.`,
    `Use this to ${verbWords} a ${noun}.`,
    `${verbWords[0].toUpperCase()}${verbWords.slice(1)} ${noun} records.`,
  ]);
  const descriptions = params.map((p) => paramDescription(random, p.words, noun));
  return { name, verbWords, noun, description, params, spec: toolSpec(name, description, params, descriptions) };
}

/** The JSON Schema a chat template shows for `params`, by the code that converts a user's zod schema. */
export function toolSpec(
  name: string,
  description: string,
  params: readonly ParamDef[],
  descriptions: readonly string[],
): ToolSpec {
  const shape: Record<string, z.ZodType> = {};
  params.forEach((p, i) => {
    let schema: z.ZodType =
      p.type === 'string'
        ? z.string()
        : p.type === 'integer'
          ? z.number().int()
          : p.type === 'number'
            ? z.number()
            : p.type === 'boolean'
              ? z.boolean()
              : z.enum(p.options as [string, ...string[]]);
    schema = schema.describe(descriptions[i]);
    shape[p.name] = p.required ? schema : schema.optional();
  });
  return { type: 'function', function: { name, description, parameters: parametersJsonSchema(name, z.object(shape)) } };
}

/** Distinct tools (distinct nouns, so a request names exactly one). */
export function generateTools(random: Random, n: number): GeneratedTool[] {
  const tools: GeneratedTool[] = [];
  const nouns = new Set<string>();
  while (tools.length < n) {
    const tool = generateTool(random, nouns);
    nouns.add(tool.noun);
    tools.push(tool);
  }
  return tools;
}
