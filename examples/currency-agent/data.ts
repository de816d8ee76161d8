import { Random, writeJsonl, type ChatMessage } from 'rollout-studio';
import { CURRENCIES, exchange } from './tools';

const SYSTEM = 'Use the exchange tool to convert money, then reply with <answer>the amount</answer>.';
const random = Random.fromSeed(1);
const pick = <T>(items: readonly T[]) => items[random.nextInt(items.length)];

function question(id: string) {
  const amount = Number(`${1 + random.nextInt(5000)}.${random.nextInt(10)}${1 + random.nextInt(9)}`);
  const from = pick(CURRENCIES);
  const to = pick(CURRENCIES.filter((c) => c !== from));
  const prompt = pick([`How much is ${amount} ${from} in ${to}?`, `Convert ${amount} ${from} to ${to}.`]);
  return { id, system: SYSTEM, prompt, answer: exchange(amount, from, to), amount, from, to };
}

function demonstration(q: ReturnType<typeof question>): { messages: ChatMessage[] } {
  const result = exchange(q.amount, q.from, q.to);
  const reported = random.nextFloat() < 0.75 ? String(Math.round(Number(result))) : result;
  return {
    messages: [
      { role: 'system', content: q.system },
      { role: 'user', content: q.prompt },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { type: 'function', function: { name: 'exchange', arguments: { amount: q.amount, from: q.from, to: q.to } } },
        ],
      },
      { role: 'tool', name: 'exchange', content: result },
      { role: 'assistant', content: `<answer>${reported}</answer>` },
    ],
  };
}

// npx tsx data.ts [train,heldout,demonstrations]
const [train, heldout, demos] = (process.argv[2] ?? '400,100,300').split(',').map(Number);
const rows = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => question(`${prefix}-${i}`));
writeJsonl('data/train.jsonl', rows(train, 'train'));
writeJsonl('data/heldout.jsonl', rows(heldout, 'heldout'));
writeJsonl('data/sft.jsonl', rows(demos, 'demo').map(demonstration));
