import type { Random } from '../../../foundations/models/random';
import type { ParamDef } from './tools';
import { between, chance, decimalValue, enumValue, integerValue, madeUpWord, nameValue, pick } from './values';
import { ENUM_WORDS, NOUNS, TOOL_NOUNS } from './words';

/**
 * The parameters of a plain-words request (chatEpisodes.ts's `plainRequestEpisode`): a pair told
 * apart by "from … to …", perhaps an amount, perhaps an enum option said by itself. The draws
 * are the episode's, in its order: the corpus tests pin the episodes a random stream makes.
 */

/** Verbs of tools that take something from one place, state or owner to another. */
const PAIR_VERBS = 'move transfer copy switch migrate reassign route ship forward relocate shift send'.split(' ');
/** What a pair of parameters names (`from_zone`, `to_zone`). */
const PAIR_THINGS =
  'zone room team region floor queue folder stage plan tier channel site branch warehouse desk level format language'.split(
    ' ',
  );
/** The two parameters' name prefixes; a request tells them apart by "from … to …", whatever the names. */
const ROLE_PAIRS: ReadonlyArray<readonly [string, string]> = [
  ['from', 'to'],
  ['source', 'target'],
  ['origin', 'destination'],
  ['old', 'new'],
  ['current', 'new'],
];

/** The options a pair of enum parameters shares: ordinary option words, made-up words or nouns. */
function pairOptions(random: Random): string[] {
  const source = random.nextFloat();
  const word = () =>
    source < 0.5 ? pick(random, ENUM_WORDS) : source < 0.75 ? madeUpWord(random, 2).toLowerCase() : pick(random, NOUNS);
  const options = new Set<string>();
  const n = between(random, 3, 8);
  for (let tries = 0; options.size < n && tries < 50; tries++) options.add(word());
  return [...options];
}

export function pairPhrase(random: Random, x: string, y: string): string {
  return pick(random, [
    `from ${x} to ${y}`,
    `from ${x} to ${y}`,
    `to ${y} from ${x}`,
    `${x} to ${y}`,
    `out of ${x} into ${y}`,
    `into ${y}, from ${x}`,
  ]);
}

/** A plain-words request's parameters and the values it asks for. */
export interface PlainRequestParams {
  verb: string;
  noun: string;
  /** What the pair names (`zone` of `from_zone`). */
  thing: string;
  /** The pair's values: `x` for the first role ("from"), `y` for the second ("to"). */
  x: string;
  y: string;
  /** The enum options the pair shares (none when the pair takes names). */
  options: string[];
  /** In the sentence's order; `descriptions` goes with them, index for index. */
  params: ParamDef[];
  descriptions: string[];
  /** The call's arguments by parameter name. */
  args: Record<string, string | number | boolean>;
  /** The amount as the request says it, when there is an amount parameter. */
  amount: string | undefined;
  /** The enum option said by itself before the noun ("urgent "), or ''. */
  adjective: string;
}

/** The pair of parameters of one kind, told apart by their roles (`from_zone`, `to_zone`). */
function pairParams(
  random: Random,
  verb: string,
  noun: string,
  thing: string,
): Pick<PlainRequestParams, 'x' | 'y' | 'options' | 'params' | 'descriptions' | 'args'> {
  const [a, b] = pick(random, ROLE_PAIRS);
  const asEnum = chance(random, 0.7);
  const options = asEnum ? pairOptions(random) : [];
  const [x, y] = asEnum ? random.shuffle([...options]).slice(0, 2) : [nameValue(random).text, nameValue(random).text];
  const pair: ParamDef[] = [a, b].map((role) => ({
    name: `${role}_${thing}`,
    words: `${role} ${thing}`,
    type: asEnum ? 'enum' : 'string',
    ...(asEnum ? { options } : {}),
    required: true,
    value: (r: Random) => (asEnum ? enumValue(r, options) : nameValue(r)),
  }));
  return {
    x,
    y,
    options,
    params: [...pair],
    descriptions: [`The ${thing} to ${verb} the ${noun} from.`, `The ${thing} to ${verb} the ${noun} to.`],
    args: { [pair[0].name]: x, [pair[1].name]: y },
  };
}

/** Perhaps an amount parameter (a bare number in the request); returns the amount as said. */
function addAmount(random: Random, request: PlainRequestParams): string | undefined {
  if (!chance(random, 0.6)) return undefined;
  const { verb, noun } = request;
  const name = pick(random, ['amount', 'quantity', 'count', 'units', 'total', 'number']);
  const value = chance(random, 0.6)
    ? integerValue(random, { negative: 0, digits: between(random, 1, 5) })
    : decimalValue(random, { negative: 0 });
  request.params.push({
    name,
    words: name,
    type: value.kind === 'integer' ? 'integer' : 'number',
    required: true,
    value: () => value,
  });
  request.descriptions.push(pick(random, [`How many to ${verb}.`, `The ${name}.`, `The ${name} of ${noun}s.`]));
  request.args[name] = value.json;
  return value.text;
}

/** Perhaps an enum parameter whose option the request says by itself ("the urgent parcel"); returns it as said. */
function addAdjective(random: Random, request: PlainRequestParams): string {
  if (!chance(random, 0.4)) return '';
  const words = pick(random, ['priority', 'mode', 'type', 'category', 'size', 'status']);
  const choices = [...new Set(Array.from({ length: between(random, 2, 4) }, () => pick(random, ENUM_WORDS)))].filter(
    (o) => !request.options.includes(o),
  );
  if (choices.length === 0) return '';
  const value = pick(random, choices);
  request.params.push({
    name: words,
    words,
    type: 'enum',
    options: choices,
    required: true,
    value: () => ({ kind: 'enum', text: value, json: value }),
  });
  request.descriptions.push(`The ${words} of the ${request.noun}.`);
  request.args[words] = value;
  return `${value} `;
}

/** A plain-words request's verb, noun and parameters, drawn in the episode's order. */
export function plainRequestParams(random: Random): PlainRequestParams {
  const verb = pick(random, PAIR_VERBS);
  const noun = pick(random, TOOL_NOUNS);
  const thing = pick(
    random,
    PAIR_THINGS.filter((t) => t !== noun),
  );
  const request: PlainRequestParams = {
    verb,
    noun,
    thing,
    ...pairParams(random, verb, noun, thing),
    amount: undefined,
    adjective: '',
  };
  request.amount = addAmount(random, request);
  request.adjective = addAdjective(random, request);
  return request;
}
