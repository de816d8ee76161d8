/**
 * The currency agent of agent.ts as people write it on the Vercel AI SDK: a `tool()` and
 * `generateText`, whose own loop runs the tool and calls the model again, at most 3 calls
 * (`stopWhen: isStepCount(3)`, agent.ts's loop). Rollout Studio calls the exported function once
 * per rollout with the dataset row and the session's base URL and key.
 *
 * The provider is `@ai-sdk/openai-compatible`, not `@ai-sdk/openai`: the latter sends OpenAI's
 * Responses API (`POST /responses`) by default, which Rollout Studio's endpoint (and most servers
 * that are not OpenAI) does not serve; openai-compatible speaks Chat Completions.
 *
 * The tool's schema is written with `jsonSchema()`, not zod: the AI SDK turns a zod schema into
 * JSON Schema with `$schema` and `additionalProperties: false` added, and those land in the prompt
 * the model reads, which would then differ from agent.ts's and from the warm start's
 * demonstrations (settings.ts). With `jsonSchema()` the model sees agent.ts's schema as written.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, isStepCount, jsonSchema, tool } from 'ai';

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

interface ExchangeArgs {
  amount: number;
  from: string;
  to: string;
}

function exchange(args: ExchangeArgs): string {
  if (!(args.from in RATES) || !(args.to in RATES)) return `Error: unknown currency ${args.from} or ${args.to}`;
  return ((args.amount / RATES[args.from]) * RATES[args.to]).toFixed(2);
}

export const tools = {
  exchange: tool({
    description: "Convert an amount of money from one currency to another at today's rate.",
    inputSchema: jsonSchema<ExchangeArgs>({
      type: 'object',
      properties: {
        amount: { type: 'number', description: 'How much money' },
        from: { type: 'string', enum: CURRENCIES, description: 'The currency the amount is in' },
        to: { type: 'string', enum: CURRENCIES, description: 'The currency to convert to' },
      },
      required: ['amount', 'from', 'to'],
    }),
    // A string result goes back to the model as the tool message's text (a non-string would be JSON).
    execute: async (args) => exchange(args),
  }),
};

/** The question of a dataset row: its last user message. */
function question(row: { messages: { role: string; content: unknown }[] }): string {
  const user = row.messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

export default async function currencyAgent(
  row: { messages: { role: string; content: unknown }[] },
  { baseURL, apiKey, model, signal }: { baseURL: string; apiKey: string; model: string; signal: AbortSignal },
): Promise<string> {
  const provider = createOpenAICompatible({ name: 'rollout-studio', baseURL, apiKey });
  const result = await generateText({
    model: provider(model),
    instructions: SYSTEM,
    prompt: question(row),
    tools,
    stopWhen: isStepCount(3),
    abortSignal: signal,
  });
  // The last step's text: empty when the third answer was still a tool call, as in agent.ts.
  return result.text;
}
