import type { ChatMessage } from '../../../contract/protocol/chatMessages';
import type { Random } from '../../../foundations/models/random';
import type { CorpusContext } from './corpusContext';
import { encodeChat, type CorpusEpisode, type Skill } from './episode';
import { maybeFiller, paragraph } from './text';
import { fieldNames } from './textEpisodes';
import { generateTool, generateTools, toolSpec, type GeneratedTool, type ParamDef } from './tools';
import { anyValue, between, chance, nameValue, pick, type CorpusValue } from './values';
import { pairPhrase, plainRequestParams, type PlainRequestParams } from './plainRequestParams';
import { NOUNS, SYSTEM_PROMPTS } from './words';

/**
 * Chat episodes in the model's own template, laid out token for token as the agent loop lays
 * out a rollout: answering from the conversation, calling a random tool with arguments copied
 * from the request, reading its result back into the answer, and chaining two calls (the second
 * call's argument copied from the first result). The answer's format is always stated, in the
 * system prompt or the request, so the format is learnable rather than a coin toss.
 */

export type AnswerFormat = 'tag' | 'sentence' | 'plain';

export const capitalise = (s: string) => s[0].toUpperCase() + s.slice(1);

function instruction(random: Random, format: AnswerFormat): string {
  if (format === 'tag')
    return pick(random, [
      'Reply with <answer>the answer</answer>.',
      'Put the final answer in <answer></answer> tags.',
      'Give the answer as <answer>...</answer>.',
      'End with <answer>your answer</answer>.',
    ]);
  if (format === 'plain')
    return pick(random, [
      'Reply with the value only.',
      'Answer with just the value.',
      'Give only the answer, nothing else.',
    ]);
  return pick(random, ['Answer in one sentence.', 'Answer with a short sentence.']);
}

export function answerText(format: AnswerFormat, fieldWords: string, value: string): string {
  if (format === 'tag') return `<answer>${value}</answer>`;
  if (format === 'plain') return value;
  return `The ${fieldWords} is ${value}.`;
}

/** The conversation's opening: a system prompt (or none) and where the format instruction goes. */
export function opening(random: Random): {
  format: AnswerFormat;
  system: ChatMessage[];
  userSuffix: string;
  kwargs: Record<string, unknown>;
} {
  const format = pick(random, ['tag', 'tag', 'sentence', 'plain'] as const);
  const text = instruction(random, format);
  const inSystem = chance(random, 0.65);
  const system: ChatMessage[] =
    inSystem || chance(random, 0.5)
      ? [{ role: 'system', content: `${pick(random, SYSTEM_PROMPTS)}${inSystem ? ` ${text}` : ''}` }]
      : [];
  // Qwen3 templates: most agents run with thinking off (an empty thinking block in the prompt); some leave it on.
  const kwargs = chance(random, 0.7) ? { enable_thinking: false } : {};
  return { format, system, userSuffix: inSystem ? '' : ` ${text}`, kwargs };
}

/** Tools on offer: mostly one (each costs ~100 prompt tokens), sometimes two or three. */
function toolCount(random: Random): number {
  const r = random.nextFloat();
  return r < 0.65 ? 1 : r < 0.95 ? 2 : 3;
}

/** How a request mentions an argument: its name in words, then its value. */
function mention(random: Random, param: ParamDef, value: CorpusValue): string {
  if (param.type === 'boolean') {
    const thing = param.words.replace(/^include /, '');
    return value.json ? `include the ${thing}` : `do not include the ${thing}`;
  }
  const shown =
    (value.kind === 'phrase' || value.kind === 'name') && chance(random, 0.3) ? `"${value.text}"` : value.text;
  return pick(random, [
    `${param.words} ${shown}`,
    `${param.words} is ${shown}`,
    `${param.words}: ${shown}`,
    `${param.words} = ${shown}`,
    `the ${param.words} ${shown}`,
  ]);
}

function joinMentions(parts: readonly string[]): string {
  return parts.length <= 1 ? (parts[0] ?? '') : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}

interface Call {
  tool: GeneratedTool;
  args: Record<string, string | number | boolean>;
  mentions: string[];
}

/** The required arguments and some optional ones, each with a value and how the request says it. */
function makeCall(random: Random, tool: GeneratedTool): Call {
  const args: Record<string, string | number | boolean> = {};
  const mentions: string[] = [];
  for (const p of tool.params) {
    if (!p.required && chance(random, 0.5)) continue;
    const value = p.value(random);
    args[p.name] = value.json;
    mentions.push(mention(random, p, value));
  }
  if (chance(random, 0.5)) random.shuffle(mentions);
  return { tool, args, mentions };
}

function request(random: Random, call: Call): string {
  const verb = call.tool.verbWords;
  const noun = call.tool.noun;
  const m = joinMentions(call.mentions);
  return pick(random, [
    `Please ${verb} the ${noun} with ${m}.`,
    `Can you ${verb} a ${noun}? Use ${m}.`,
    `${capitalise(verb)} the ${noun}: ${m}.`,
    `I need you to ${verb} the ${noun} for ${m}.`,
    `${capitalise(m)}. ${capitalise(verb)} the ${noun}, please.`,
  ]);
}

function question(random: Random, words: string): string {
  return pick(random, [
    `What is the ${words}?`,
    `Tell me the ${words}.`,
    `I only need the ${words}.`,
    `Which ${words} does it have?`,
    `And what is its ${words}?`,
  ]);
}

/** A tool's result: JSON (compact or spaced) or a sentence, holding `fields` (snake_case keys). */
function resultText(random: Random, noun: string, fields: ReadonlyArray<[string, CorpusValue]>): string {
  const r = random.nextFloat();
  if (r < 0.45) return JSON.stringify(Object.fromEntries(fields.map(([k, v]) => [k, v.json])));
  if (r < 0.75) return `{${fields.map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v.json)}`).join(', ')}}`;
  return `${capitalise(noun)}: ` + fields.map(([k, v]) => `${k.replace(/_/g, ' ')} ${v.text}`).join(', ') + '.';
}

function toolCallMessage(call: Call): ChatMessage {
  return {
    role: 'assistant',
    content: '',
    tool_calls: [{ type: 'function', function: { name: call.tool.name, arguments: call.args } }],
  };
}

/** Result fields of a call: new values under names the call did not use. */
function resultFields(random: Random, call: Call, n: number): Array<[string, CorpusValue]> {
  const used = new Set(Object.keys(call.args));
  return fieldNames(random, n + used.size)
    .map((w) => w.replace(/ /g, '_'))
    .filter((k) => !used.has(k))
    .slice(0, n)
    .map((k) => [k, anyValue(random)]);
}

/** Request → call with copied arguments → result → the asked field copied into the answer. */
export function toolEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  const tools = generateTools(random, toolCount(random));
  const call = makeCall(random, pick(random, tools));
  const fields = resultFields(random, call, between(random, 1, 4));
  const [askKey, askValue] = pick(random, fields);
  const askWords = askKey.replace(/_/g, ' ');
  const messages: ChatMessage[] = [
    ...system,
    { role: 'user', content: `${request(random, call)} ${question(random, askWords)}${userSuffix}` },
    toolCallMessage(call),
    { role: 'tool', name: call.tool.name, content: resultText(random, call.tool.noun, random.shuffle([...fields])) },
    { role: 'assistant', content: answerText(format, askWords, askValue.text) },
  ];
  return encodeChat(context.template, 'tool', messages, {
    tools: tools.map((t) => t.spec),
    kwargs,
    turnSkills: ['tool_call', 'tool_answer'],
  });
}

/** Two calls: the first result holds the key the second tool takes. */
export function chainEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  const first = generateTool(random);
  const linkWords = `${pick(
    random,
    NOUNS.filter((n) => n !== first.noun),
  )} id`;
  const second = generateTool(random, new Set([first.noun]), { params: 1, firstParam: linkWords });
  const tools = random.shuffle([
    first,
    second,
    ...(chance(random, 0.15)
      ? generateTools(random, 1).filter((t) => t.noun !== first.noun && t.noun !== second.noun)
      : []),
  ]);
  const firstCall = makeCall(random, first);
  const link = second.params[0].value(random);
  const firstFields = random.shuffle([
    [second.params[0].name, link] as [string, CorpusValue],
    ...resultFields(random, firstCall, between(random, 0, 2)),
  ]);
  const secondCall: Call = { tool: second, args: { [second.params[0].name]: link.json }, mentions: [] };
  const fields = resultFields(random, secondCall, between(random, 1, 3));
  const [askKey, askValue] = pick(random, fields);
  const askWords = askKey.replace(/_/g, ' ');
  const messages: ChatMessage[] = [
    ...system,
    {
      role: 'user',
      content: `${request(random, firstCall)} Then ${second.verbWords} the ${second.noun} with the ${linkWords} it gives. ${question(random, askWords)}${userSuffix}`,
    },
    toolCallMessage(firstCall),
    { role: 'tool', name: first.name, content: resultText(random, first.noun, firstFields) },
    toolCallMessage(secondCall),
    { role: 'tool', name: second.name, content: resultText(random, second.noun, fields) },
    { role: 'assistant', content: answerText(format, askWords, askValue.text) },
  ];
  return encodeChat(context.template, 'chain', messages, {
    tools: tools.map((t) => t.spec),
    kwargs,
    turnSkills: ['tool_call', 'tool_call', 'tool_answer'],
  });
}

/** A question answered from the conversation itself (with or without tools on offer: none is needed). */
export function chatAnswerEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  const fields = fieldNames(random, between(random, 1, 5));
  const values = fields.map(() => anyValue(random));
  const subject = chance(random, 0.5) ? nameValue(random).text : `the ${pick(random, NOUNS)}`;
  const facts = fields.map((f, i) => `The ${f} of ${subject} is ${values[i].text}.`);
  const j = random.nextInt(fields.length);
  const context_ = chance(random, 0.5)
    ? `${maybeFiller(random, 0.4)}${random.shuffle(facts).join(' ')}`
    : `${subject}: ` + fields.map((f, i) => `${f} ${values[i].text}`).join('; ') + '.';
  const ask = pick(random, [
    `What is the ${fields[j]} of ${subject}?`,
    `Tell me the ${fields[j]}.`,
    `${capitalise(fields[j])}?`,
  ]);
  const withTools = chance(random, 0.3);
  const messages: ChatMessage[] = [
    ...system,
    { role: 'user', content: `${context_}\n${ask}${userSuffix}` },
    { role: 'assistant', content: answerText(format, fields[j], values[j].text) },
  ];
  return encodeChat(context.template, 'chat', messages, {
    ...(withTools ? { tools: generateTools(random, between(random, 1, 2)).map((t) => t.spec) } : {}),
    kwargs,
    turnSkills: ['chat_answer'],
  });
}

/** A chat with a previous exchange before the request: history the model reads past. */
export function multiTurnEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  const tools = generateTools(random, toolCount(random));
  const call = makeCall(random, pick(random, tools));
  const fields = resultFields(random, call, between(random, 1, 3));
  const [askKey, askValue] = pick(random, fields);
  const askWords = askKey.replace(/_/g, ' ');
  const previous = paragraph(random, 1);
  const messages: ChatMessage[] = [
    ...system,
    { role: 'user', content: `${previous} Say just ok.` },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: `${request(random, call)} ${question(random, askWords)}${userSuffix}` },
    toolCallMessage(call),
    { role: 'tool', name: call.tool.name, content: resultText(random, call.tool.noun, fields) },
    { role: 'assistant', content: answerText(format, askWords, askValue.text) },
  ];
  const skills: Skill[] = ['chat_answer', 'tool_call', 'tool_answer'];
  return encodeChat(context.template, 'multi_turn', messages, {
    tools: tools.map((t) => t.spec),
    kwargs,
    turnSkills: skills,
  });
}

/** The plain-words request's tool: its parameters in a shuffled order (the schema's order is not the sentence's). */
function plainRequestTool(random: Random, request: PlainRequestParams): GeneratedTool {
  const { verb, noun, thing, params, descriptions } = request;
  // The names, not the positions, say where a value goes.
  const order = random.shuffle(params.map((_, i) => i));
  const name = `${verb}_${noun}`;
  const description = pick(random, [
    `${capitalise(verb)} a ${noun} from one ${thing} to another.`,
    `${capitalise(verb)} the ${noun}.`,
    `Use this to ${verb} ${noun}s between ${thing}s.`,
  ]);
  return {
    name,
    verbWords: verb,
    noun,
    description,
    params: order.map((i) => params[i]),
    spec: toolSpec(
      name,
      description,
      order.map((i) => params[i]),
      order.map((i) => descriptions[i]),
    ),
  };
}

/** The request's sentence: the pair by "from … to …", the amount bare, the enum option by itself. */
function plainRequestText(random: Random, request: PlainRequestParams): string {
  const { verb, noun, amount, adjective } = request;
  const where = pairPhrase(random, request.x, request.y);
  return amount !== undefined
    ? pick(random, [
        `${capitalise(verb)} ${amount} ${adjective}${noun}s ${where}.`,
        `Please ${verb} ${amount} of the ${adjective}${noun}s ${where}.`,
        `I need to ${verb} ${amount} ${where} (the ${adjective}${noun}s).`,
      ])
    : pick(random, [
        `${capitalise(verb)} the ${adjective}${noun} ${where}.`,
        `Can you ${verb} my ${adjective}${noun} ${where}?`,
        `Please ${verb} the ${adjective}${noun} ${where}.`,
      ]);
}

/**
 * A request in plain words: the arguments are said without their parameters' names — two
 * parameters of the same kind told apart by "from … to …" (in either order of the schema and
 * of the sentence), an enum option by itself ("the urgent parcel"), a bare number — so the call
 * maps words to parameters by the schema, as a user's own tasks need. Then the result is read
 * back into the answer, as in `toolEpisode`.
 */
export function plainRequestEpisode(context: CorpusContext, random: Random): CorpusEpisode {
  const { format, system, userSuffix, kwargs } = opening(random);
  const request = plainRequestParams(random);
  const tool = plainRequestTool(random, request);
  const call: Call = {
    tool,
    args: Object.fromEntries(tool.params.map((p) => [p.name, request.args[p.name]])),
    mentions: [],
  };
  const text = plainRequestText(random, request);
  const others = chance(random, 0.3) ? generateTools(random, 1).filter((t) => t.noun !== request.noun) : [];
  const fields = resultFields(random, call, between(random, 1, 3));
  const [askKey, askValue] = pick(random, fields);
  const askWords = askKey.replace(/_/g, ' ');
  const messages: ChatMessage[] = [
    ...system,
    { role: 'user', content: `${text} ${question(random, askWords)}${userSuffix}` },
    toolCallMessage(call),
    { role: 'tool', name: tool.name, content: resultText(random, request.noun, fields) },
    { role: 'assistant', content: answerText(format, askWords, askValue.text) },
  ];
  return encodeChat(context.template, 'plain_request', messages, {
    tools: random.shuffle([tool, ...others]).map((t) => t.spec),
    kwargs,
    turnSkills: ['tool_call', 'tool_answer'],
  });
}
