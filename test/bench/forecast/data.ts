/**
 * The forecast task's data: questions that ask for a city's high or low on a day of the week, and
 * demonstrations from a careless agent that always calls the tool right but reports the high
 * three times in four when the question asks for the low. The reward wants the temperature asked
 * for, so RL has one thing to teach: read "low"/"cold" in the question when writing the answer.
 */
import * as path from 'node:path';
import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { CITIES, DAYS, forecast, type City, type Day } from './tools';

export const SYSTEM_PROMPT = 'Use the forecast tool, then reply with <answer>the temperature</answer>.';

type Want = 'high' | 'low';
const FORMS: Array<{ want: Want; text: (c: City, d: Day) => string }> = [
  { want: 'high', text: (c, d) => `What is the high in ${c} on ${d}?` },
  { want: 'high', text: (c, d) => `How warm will ${c} get on ${d}?` },
  { want: 'low', text: (c, d) => `On ${d}, how cold will it get in ${c}?` },
  { want: 'low', text: (c, d) => `What is ${d}'s low in ${c}?` },
];

export interface ForecastRow {
  id: string;
  system: string;
  prompt: string;
  answer: string;
  city: City;
  day: Day;
  want: Want;
}

function questions(random: Random, count: number, prefix: string): ForecastRow[] {
  const pick = <T>(items: readonly T[]) => items[random.nextInt(items.length)];
  return Array.from({ length: count }, (_, i) => {
    const city = pick(CITIES);
    const day = pick(DAYS);
    const form = pick(FORMS);
    const answer = String(forecast(city, day)[form.want]);
    return {
      id: `${prefix}-${i}`,
      system: SYSTEM_PROMPT,
      prompt: form.text(city, day),
      answer,
      city,
      day,
      want: form.want,
    };
  });
}

/** Right calls; for a question about the low, the low only with probability `careful`. */
function demonstration(q: ForecastRow, random: Random, careful: number): { messages: ChatMessage[] } {
  const { high, low } = forecast(q.city, q.day);
  const reported = q.want === 'low' && random.nextFloat() < careful ? low : high;
  return {
    messages: [
      { role: 'system', content: q.system },
      { role: 'user', content: q.prompt },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'forecast', arguments: { city: q.city, day: q.day } } }],
      },
      { role: 'tool', name: 'forecast', content: `high ${high}, low ${low}` },
      { role: 'assistant', content: `<answer>${reported}</answer>` },
    ],
  };
}

export const DEFAULTS = { seed: 7, train: 400, heldout: 100, sft: 300, careful: 0.25 };

export function generateDataset(options: typeof DEFAULTS & { out: string }): void {
  const random = Random.fromSeed(options.seed);
  writeJsonl(path.join(options.out, 'train.jsonl'), questions(random, options.train, 'train'));
  writeJsonl(path.join(options.out, 'heldout.jsonl'), questions(random, options.heldout, 'heldout'));
  const demos = questions(random, options.sft, 'demo');
  writeJsonl(
    path.join(options.out, 'sft.jsonl'),
    demos.map((q) => demonstration(q, random, options.careful)),
  );
}
