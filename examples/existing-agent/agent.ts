/**
 * The currency agent as people write agents on the official `openai` SDK: its own system prompt,
 * its own tool (a JSON Schema and a function), its own loop. Nothing in it knows about training:
 * Rollout Studio calls the exported function once per rollout with the dataset row and a base URL
 * and API key that reach the policy being trained. In production the same function runs against
 * any OpenAI-compatible server (`rollout-studio serve` a checkpoint, say).
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

const SYSTEM = 'Use the exchange tool to convert money, then reply with <answer>the amount</answer>.';

/** Today's rates: units of each currency per US dollar. */
const RATES: Record<string, number> = {
  USD: 1,
  EUR: 0.9215,
  GBP: 0.7871,
  JPY: 151.37,
  CHF: 0.8823,
  CAD: 1.3642,
  AUD: 1.5208,
};
const CURRENCIES = Object.keys(RATES);

export const tools: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'exchange',
      description: "Convert an amount of money from one currency to another at today's rate.",
      parameters: {
        type: 'object',
        properties: {
          amount: { type: 'number', description: 'How much money' },
          from: { type: 'string', enum: CURRENCIES, description: 'The currency the amount is in' },
          to: { type: 'string', enum: CURRENCIES, description: 'The currency to convert to' },
        },
        required: ['amount', 'from', 'to'],
      },
    },
  },
];

function exchange(args: { amount: number; from: string; to: string }): string {
  if (!(args.from in RATES) || !(args.to in RATES)) return `Error: unknown currency ${args.from} or ${args.to}`;
  return ((args.amount / RATES[args.from]) * RATES[args.to]).toFixed(2);
}

/** The question of a dataset row: its last user message. */
function question(row: { messages: { role: string; content: unknown }[] }): string {
  const user = row.messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

export default async function currencyAgent(
  row: { messages: { role: string; content: unknown }[] },
  { baseURL, apiKey, model, signal }: { baseURL: string; apiKey: string; model: string; signal: AbortSignal },
): Promise<string> {
  const client = new OpenAI({ baseURL, apiKey });
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: question(row) },
  ];
  for (let step = 0; step < 3; step++) {
    const completion = await client.chat.completions.create({ model, messages, tools }, { signal });
    const message = completion.choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const result =
        call.function.name === 'exchange' ? exchange(JSON.parse(call.function.arguments)) : 'Error: no such tool';
      messages.push({ role: 'tool', tool_call_id: call.id, content: result });
    }
  }
  return '';
}
