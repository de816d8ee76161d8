/**
 * Data of the unit-conversion task: questions with a value (integers and decimals) and two units
 * of a dimension; the answer is the converted value as the tool reports it. Demonstrations are
 * imperfect on purpose so RL has room, as if written by a careless agent: most call the tool
 * right but report its result rounded to a whole number (`round`), some call it with a mistyped
 * value (`botch`), the rest call it and copy its result exactly (`correct`); `skip` (answer with
 * a guess, no call) is an option, 0 by default.
 *
 * Why rounding, not skipping, by default (measured from the shipped base, 2026-12-03): with 45 %
 * of the demonstrations skipping the tool, the warm-started model's calls got the units wrong
 * (13 of 190 sampled calls named both of the question's units, in either order), and 40 GRPO
 * steps did not teach it (held-out 0 → 0 to 9 %); the base learns the unit mapping from about
 * 900 correct calls (3 epochs of 300), not from the reward. A flaw in what the agent does with
 * the result is one RL can fix and SFT cannot, since SFT imitates it.
 */
import * as path from 'node:path';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { convert, UNITS, type Unit } from './units';

export const SYSTEM_PROMPT =
  'Answer the question with the convert_units tool, then reply with <answer>the number</answer>.';

export interface ConversionRow {
  id: string;
  system: string;
  prompt: string;
  answer: string;
  value: number;
  from: string;
  to: string;
}

const TEMPLATES = [
  (v: string, a: string, b: string) => `How many ${b} are in ${v} ${a}?`,
  (v: string, a: string, b: string) => `Convert ${v} ${a} to ${b}.`,
  (v: string, a: string, b: string) => `What is ${v} ${a} in ${b}?`,
  (v: string, a: string, b: string) => `${v} ${a} is how many ${b}?`,
];

function value(random: Random): number {
  const whole = 1 + random.nextInt(random.nextFloat() < 0.5 ? 100 : 5000);
  return random.nextFloat() < 0.5 ? whole : Number(`${whole}.${1 + random.nextInt(9)}`);
}

export function generateQuestions(options: {
  seed: number;
  count: number;
  prefix: string;
  exclude?: ReadonlySet<string>;
}): ConversionRow[] {
  const random = Random.fromSeed(options.seed);
  const seen = new Set(options.exclude ?? []);
  const rows: ConversionRow[] = [];
  while (rows.length < options.count) {
    const from = UNITS[random.nextInt(UNITS.length)];
    const others = UNITS.filter((u: Unit) => u.dimension === from.dimension && u !== from);
    const to = others[random.nextInt(others.length)];
    const v = value(random);
    const prompt = TEMPLATES[random.nextInt(TEMPLATES.length)](String(v), from.name, to.name);
    if (seen.has(prompt)) continue;
    seen.add(prompt);
    rows.push({
      id: `${options.prefix}-${String(rows.length).padStart(4, '0')}`,
      system: SYSTEM_PROMPT,
      prompt,
      answer: String(convert(v, from.name, to.name)),
      value: v,
      from: from.name,
      to: to.name,
    });
  }
  return rows;
}

export function generateDemonstrations(
  rows: readonly ConversionRow[],
  options: { seed: number; skip: number; botch: number; round: number },
): { id: string; kind: string; messages: ChatMessage[] }[] {
  const random = Random.fromSeed(options.seed);
  return rows.map((row, i) => {
    const roll = random.nextFloat();
    const kind =
      roll < options.skip
        ? 'skip'
        : roll < options.skip + options.botch
          ? 'botch'
          : roll < options.skip + options.botch + options.round
            ? 'round'
            : 'correct';
    const messages: ChatMessage[] = [
      { role: 'system', content: row.system },
      { role: 'user', content: row.prompt },
    ];
    let answer: string;
    if (kind === 'skip') answer = String(Number(row.answer) + 1 + random.nextInt(50));
    else {
      const v = kind === 'botch' ? row.value + 1 + random.nextInt(9) : row.value;
      const result = String(convert(v, row.from, row.to));
      messages.push(
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            {
              type: 'function',
              function: { name: 'convert_units', arguments: { value: v, from_unit: row.from, to_unit: row.to } },
            },
          ],
        },
        { role: 'tool', name: 'convert_units', content: result },
      );
      answer = kind === 'round' ? String(Math.round(Number(result))) : result;
    }
    messages.push({ role: 'assistant', content: `<answer>${answer}</answer>` });
    return { id: `sft-${String(i).padStart(4, '0')}`, kind, messages };
  });
}

export const DEFAULTS = { seed: 1, train: 400, heldout: 100, sft: 300, skip: 0, botch: 0.1, round: 0.75 };

export function generateDataset(options: typeof DEFAULTS & { out: string }): void {
  const train = generateQuestions({ seed: options.seed, count: options.train, prefix: 'train' });
  const heldout = generateQuestions({
    seed: options.seed + 1,
    count: options.heldout,
    prefix: 'heldout',
    exclude: new Set(train.map((r) => r.prompt)),
  });
  // Demonstrations are about questions of their own (neither training nor held-out ones).
  const demoQuestions = generateQuestions({
    seed: options.seed + 2,
    count: options.sft,
    prefix: 'demo',
    exclude: new Set([...train, ...heldout].map((r) => r.prompt)),
  });
  writeJsonl(path.join(options.out, 'train.jsonl'), train);
  writeJsonl(path.join(options.out, 'heldout.jsonl'), heldout);
  writeJsonl(
    path.join(options.out, 'sft.jsonl'),
    generateDemonstrations(demoQuestions, {
      seed: options.seed + 3,
      skip: options.skip,
      botch: options.botch,
      round: options.round,
    }),
  );
}
