/**
 * Dataset generator of the calculator example: arithmetic a small model cannot do in its head
 * (multiplying 3–4 digit numbers, mixed operations, exact divisions, short word problems), with
 * exact integer answers. Writes train.jsonl, heldout.jsonl and sft.jsonl (demonstrations that
 * call the calculator, a fraction of them skipping it or mistyping the expression).
 *
 *   npx tsx examples/calculator/data.ts [--out DIR] [--seed N] [--train N] [--heldout N] [--sft N] [--skip F] [--botch F]
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { evaluateArithmetic, formatNumber, Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { SYSTEM_PROMPT } from './rows';
import { calculator } from './tools';

export interface ProblemRow {
  id: string;
  system: string;
  prompt: string;
  answer: string;
  expression: string;
}

type Problem = { prompt: string; expression: string };

const between = (random: Random, low: number, high: number) => low + random.nextInt(high - low + 1);

const PROBLEMS: ((random: Random) => Problem)[] = [
  (r) => {
    const [a, b] = [between(r, 100, 9999), between(r, 12, 999)];
    return { prompt: `What is ${a} * ${b}?`, expression: `${a} * ${b}` };
  },
  (r) => {
    const [a, b, c] = [between(r, 100, 999), between(r, 100, 999), between(r, 1000, 99999)];
    return { prompt: `What is ${a} * ${b} - ${c}?`, expression: `${a} * ${b} - ${c}` };
  },
  (r) => {
    const [a, b, c] = [between(r, 100, 9999), between(r, 100, 9999), between(r, 12, 99)];
    return { prompt: `What is (${a} + ${b}) * ${c}?`, expression: `(${a} + ${b}) * ${c}` };
  },
  (r) => {
    const [b, k] = [between(r, 12, 99), between(r, 101, 999)];
    return { prompt: `What is ${b * k} divided by ${b}?`, expression: `${b * k} / ${b}` };
  },
  (r) => {
    const [boxes, per, extra] = [between(r, 23, 480), between(r, 12, 144), between(r, 1, 99)];
    return {
      prompt: `A warehouse has ${boxes} boxes with ${per} items each, plus ${extra} loose items. How many items are there in total?`,
      expression: `${boxes} * ${per} + ${extra}`,
    };
  },
];

export function generateProblems(options: {
  seed: number;
  count: number;
  prefix: string;
  exclude?: ReadonlySet<string>;
}): ProblemRow[] {
  const random = Random.fromSeed(options.seed);
  const seen = new Set(options.exclude ?? []);
  const rows: ProblemRow[] = [];
  while (rows.length < options.count) {
    const problem = PROBLEMS[random.nextInt(PROBLEMS.length)](random);
    if (seen.has(problem.prompt)) continue;
    seen.add(problem.prompt);
    rows.push({
      id: `${options.prefix}-${String(rows.length).padStart(4, '0')}`,
      system: SYSTEM_PROMPT,
      prompt: problem.prompt,
      answer: formatNumber(evaluateArithmetic(problem.expression)),
      expression: problem.expression,
    });
  }
  return rows;
}

export type DemonstrationKind = 'correct' | 'skip' | 'botch';

/** A plausible wrong number: one digit changed. */
function mistype(text: string, random: Random): string {
  const digits = [...text].map((c, i) => (/\d/.test(c) ? i : -1)).filter((i) => i >= 0);
  const at = digits[random.nextInt(digits.length)];
  const old = Number(text[at]);
  const replacement = (old + 1 + random.nextInt(9)) % 10;
  return text.slice(0, at) + replacement + text.slice(at + 1);
}

export function generateDemonstrations(
  problems: readonly ProblemRow[],
  options: { seed: number; skip: number; botch: number },
): { id: string; kind: DemonstrationKind; questionId: string; messages: ChatMessage[] }[] {
  if (options.skip < 0 || options.botch < 0 || options.skip + options.botch > 1)
    throw new RangeError('skip and botch are fractions that add up to at most 1');
  const random = Random.fromSeed(options.seed);
  return problems.map((problem, i) => {
    const roll = random.nextFloat();
    const kind: DemonstrationKind =
      roll < options.skip ? 'skip' : roll < options.skip + options.botch ? 'botch' : 'correct';
    const messages: ChatMessage[] = [
      { role: 'system', content: problem.system },
      { role: 'user', content: problem.prompt },
    ];
    let answer: string;
    if (kind === 'skip') {
      answer = mistype(problem.answer, random);
    } else {
      let expression = problem.expression;
      let result = problem.answer;
      if (kind === 'botch') {
        // A mistyped operand; retyped if the slip made the expression invalid (a divisor of 0).
        for (;;) {
          expression = mistype(problem.expression, random);
          try {
            result = formatNumber(evaluateArithmetic(expression));
            break;
          } catch {
            continue;
          }
        }
      }
      messages.push(
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ type: 'function', function: { name: calculator.name, arguments: { expression } } }],
        },
        { role: 'tool', name: calculator.name, content: result },
      );
      answer = result;
    }
    messages.push({ role: 'assistant', content: `<answer>${answer}</answer>` });
    return { id: `sft-${String(i).padStart(4, '0')}`, kind, questionId: problem.id, messages };
  });
}

export const DEFAULTS = { seed: 1, train: 400, heldout: 100, sft: 300, skip: 0.75, botch: 0 };

export function generateDataset(
  options: typeof DEFAULTS & { out: string },
): Record<string, { file: string; rows: number }> {
  const train = generateProblems({ seed: options.seed, count: options.train, prefix: 'train' });
  const heldout = generateProblems({
    seed: options.seed + 1,
    count: options.heldout,
    prefix: 'heldout',
    exclude: new Set(train.map((p) => p.prompt)),
  });
  if (options.sft > train.length)
    throw new RangeError(
      `--sft ${options.sft}: demonstrations are made from training problems, and there are ${train.length}`,
    );
  const sft = generateDemonstrations(train.slice(0, options.sft), {
    seed: options.seed + 2,
    skip: options.skip,
    botch: options.botch,
  });
  return Object.fromEntries(
    Object.entries({ train, heldout, sft }).map(([name, rows]) => {
      const file = path.join(options.out, `${name}.jsonl`);
      writeJsonl(file, rows);
      return [name, { file, rows: rows.length }];
    }),
  );
}

function main(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(['out', ...Object.keys(DEFAULTS)].map((k) => [k, { type: 'string' as const }])),
  });
  const options = { ...DEFAULTS, out: (values['out'] as string | undefined) ?? path.join(__dirname, 'data') };
  for (const key of Object.keys(DEFAULTS) as (keyof typeof DEFAULTS)[]) {
    const raw = values[key] as string | undefined;
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new Error(`--${key}: expected a number, got ${JSON.stringify(raw)}`);
    options[key] = value;
  }
  for (const [name, { file, rows }] of Object.entries(generateDataset(options)))
    console.log(`${name.padEnd(8)} ${String(rows).padStart(5)} rows  ${file}`);
}

if (require.main === module) main(process.argv.slice(2));
