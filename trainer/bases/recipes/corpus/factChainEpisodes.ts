import type { ChatMessage } from '../../../contract/protocol/chatMessages';
import type { Random } from '../../../foundations/models/random';
import { answerText, capitalise, opening } from './chatEpisodes';
import type { CorpusContext } from './corpusContext';
import { encodeChat, type CorpusEpisode, type Skill } from './episode';
import { toolSpec, type ParamDef } from './tools';
import { anyValue, between, chance, madeUpWord, nameValue, pick, type CorpusValue } from './values';
import { FIELD_WORDS, TOOL_NOUNS } from './words';

/**
 * A chain of facts read out of results that hold near misses — the reading that multi-step
 * agent tasks need and that one-call episodes do not teach, in rows as long as such tasks run.
 *
 * "What is the rating of the mentor of the agent of Brai Tolmen?" takes a call per link, each
 * call's argument copied out of the last result, then the last value into the answer. Every
 * result states the asked fact beside distractors about the same field (a former or planned
 * holder: "The former agent of Brai Tolmen was Kesh Varo.") or about a near namesake ("The agent
 * of Brai Tolmek is …"), and beside other fields, in random order and layout; so the call must
 * copy the one line that answers, not the last or first name seen. Sometimes two tools split the
 * fields, and their descriptions say which knows what.
 *
 * The tools are the corpus's random lookup tools and the relations ordinary field words — none
 * of the examples' tools, relations or question wordings (test/unit/bases/contamination.test.ts).
 */

/** Fields the search examples chain through, which no fact of a chain states. */
const EXAMPLE_RELATIONS = ['owner', 'home', 'company', 'city', 'country', 'location'];
/** Fields whose values are names, so a chain can go on from them (none of EXAMPLE_RELATIONS). */
const LINK_FIELDS =
  'customer user member driver guest author artist manager doctor team region contact partner supplier mentor tutor agent referee sponsor'.split(
    ' ',
  );
/** What makes a distractor's holder not the asked one. */
const QUALIFIERS = [
  'former',
  'previous',
  'old',
  'first',
  'planned',
  'acting',
  'temporary',
  'backup',
  'second',
  'proposed',
];
const PARAM_WORDS = ['name', 'record name', 'entity name', 'person name', 'subject name'];

interface Link {
  subject: string;
  field: string;
  value: CorpusValue;
}

/** Another name that shares all but the last few letters, or a word, of `name`. */
function namesake(random: Random, name: string): string {
  const words = name.split(' ');
  if (words.length > 1 && chance(random, 0.5)) {
    const i = random.nextInt(words.length);
    words[i] = madeUpWord(random);
  } else {
    const last = words.at(-1)!;
    const keep = Math.max(2, last.length - between(random, 1, 3));
    words[words.length - 1] =
      last.slice(0, keep) +
      madeUpWord(random, 1)
        .toLowerCase()
        .slice(0, between(random, 1, 3));
  }
  const other = words.join(' ');
  return other === name ? `${name} ${madeUpWord(random, 1)}` : other;
}

/** The sentences or record a lookup of `link.subject` returns: the fact, its distractors and other fields. */
function resultText(random: Random, link: Link, noun: string): string {
  const field = link.field;
  const facts: Array<{ text: string; key: string; json: unknown }> = [
    { text: `The ${field} of ${link.subject} is ${link.value.text}.`, key: field, json: link.value.json },
  ];
  const distractors = between(random, 1, 2);
  const qualifiers = random.shuffle([...QUALIFIERS]);
  for (let i = 0; i < distractors; i++) {
    const other = link.value.kind === 'name' ? nameValue(random) : anyValue(random);
    if (chance(random, 0.7))
      facts.push({
        text: `The ${qualifiers[i]} ${field} of ${link.subject} was ${other.text}.`,
        key: `${qualifiers[i]} ${field}`,
        json: other.json,
      });
    else
      facts.push({
        text: `The ${field} of ${namesake(random, link.subject)} is ${other.text}.`,
        key: '',
        json: other.json,
      });
  }
  const others = random
    .shuffle(FIELD_WORDS.filter((f) => f !== field && f !== 'name' && !EXAMPLE_RELATIONS.includes(f)))
    .slice(0, chance(random, 0.5) ? 1 : 0);
  for (const f of others) {
    const v = anyValue(random);
    facts.push({ text: `The ${f} of ${link.subject} is ${v.text}.`, key: f, json: v.json });
  }
  random.shuffle(facts);
  // A record holds only the subject's own fields; a namesake's line stays a sentence beside it.
  if (chance(random, 0.3)) {
    const own = facts.filter((f) => f.key);
    const record = JSON.stringify({
      name: link.subject,
      ...Object.fromEntries(own.map((f) => [f.key.replace(/ /g, '_'), f.json])),
    });
    const loose = facts.filter((f) => !f.key).map((f) => f.text);
    return [record, ...loose].join('\n');
  }
  return chance(random, 0.2)
    ? `${capitalise(noun)} records:\n${facts.map((f) => `- ${f.text}`).join('\n')}`
    : facts.map((f) => f.text).join(chance(random, 0.5) ? '\n' : ' ');
}

function chainQuestion(random: Random, fields: readonly string[], start: string): string {
  const nested = [...fields]
    .reverse()
    .map((f) => `the ${f}`)
    .join(' of ');
  return pick(random, [
    `What is ${nested} of ${start}?`,
    `Find ${nested} of ${start}.`,
    `I need ${nested} of ${start}. Look up each step.`,
    `Starting from ${start}, follow ${fields.map((f) => `the ${f}`).join(', then ')}. What do you get?`,
  ]);
}

export function factChainEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  // Mostly two or three links: made-up names cost several tokens each, and a four-link episode runs to ~1,000 tokens.
  const r = random.nextFloat();
  const depth = r < 0.5 ? 2 : r < 0.85 ? 3 : 4;
  const linkFields = random.shuffle([...LINK_FIELDS]).slice(0, depth - 1);
  const lastField = chance(random, 0.5)
    ? pick(
        random,
        LINK_FIELDS.filter((f) => !linkFields.includes(f)),
      )
    : pick(
        random,
        FIELD_WORDS.filter((f) => !LINK_FIELDS.includes(f) && f !== 'name' && !EXAMPLE_RELATIONS.includes(f)),
      );
  const fields = [...linkFields, lastField];
  const start = nameValue(random).text;
  const links: Link[] = [];
  let subject = start;
  for (const field of fields) {
    const value = field === lastField && !LINK_FIELDS.includes(field) ? anyValue(random) : nameValue(random);
    links.push({ subject, field, value });
    subject = value.text;
  }
  // One tool knows every field, or two split them (the last field on the second).
  const nouns = random.shuffle([...TOOL_NOUNS]);
  const split = chance(random, 0.4);
  const makeTool = (noun: string, knows: readonly string[]) => {
    const words = pick(random, PARAM_WORDS);
    const param: ParamDef = { name: words.replace(/ /g, '_'), words, type: 'string', required: true, value: nameValue };
    const name = `${pick(random, ['get', 'lookup', 'fetch', 'find', 'check'])}_${noun}`;
    const description = `${pick(random, ['Look up', 'Get', 'Fetch'])} a ${noun} record by name: its ${knows.join(', ')}.`;
    return {
      name,
      noun,
      param,
      spec: toolSpec(
        name,
        description,
        [param],
        [pick(random, ['Who or what to look up.', `The ${words}.`, 'The exact name.'])],
      ),
    };
  };
  const knownFirst = split ? [...new Set(linkFields)] : [...new Set(fields)];
  const first = makeTool(nouns[0], knownFirst.length ? knownFirst : fields);
  const second = split ? makeTool(nouns[1], [lastField]) : undefined;
  const messages: ChatMessage[] = [
    ...system,
    { role: 'user', content: `${chainQuestion(random, fields, start)}${userSuffix}` },
  ];
  links.forEach((link, i) => {
    const tool = second && i === links.length - 1 ? second : first;
    messages.push({
      role: 'assistant',
      content: '',
      tool_calls: [{ type: 'function', function: { name: tool.name, arguments: { [tool.param.name]: link.subject } } }],
    });
    messages.push({ role: 'tool', name: tool.name, content: resultText(random, link, tool.noun) });
  });
  messages.push({ role: 'assistant', content: answerText(format, lastField, links.at(-1)!.value.text) });
  const tools = second ? random.shuffle([first, second]) : [first];
  const skills: Skill[] = [...links.map(() => 'fact_call' as const), 'fact_answer'];
  return encodeChat(context.template, 'fact_chain', messages, {
    tools: tools.map((t) => t.spec),
    kwargs,
    turnSkills: skills,
  });
}
