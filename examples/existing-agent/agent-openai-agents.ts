/**
 * The currency agent of agent.ts as people write it on the OpenAI Agents SDK: an `Agent` with
 * its instructions and a `tool()`, run by the SDK's runner for at most 3 model calls
 * (`maxTurns: 3`, agent.ts's loop). Rollout Studio calls the exported function once per rollout
 * with the dataset row and the session's base URL and key.
 *
 * The SDK's default model provider speaks OpenAI's Responses API to api.openai.com, set once for
 * the whole process (`setDefaultOpenAIClient`, `setOpenAIAPI`). Rollout Studio's endpoint serves
 * Chat Completions, and one process runs many sessions at a time, each with its own base URL and
 * key — so each session gets a `Runner` of its own, with an `OpenAIProvider` for Chat Completions
 * (`useResponses: false`) at the session's endpoint, and no global state is touched. Tracing is
 * off: it would upload each run to OpenAI with a key the session does not have.
 *
 * The tool's schema is agent.ts's JSON Schema plus `additionalProperties: false`, which the SDK's
 * types ask of a strict tool (its default, sent as `strict: true`); that key is the one thing the
 * model reads here that agent.ts's prompt does not have. A zod schema would add `$schema` too.
 */
import { Agent, OpenAIProvider, Runner, tool } from '@openai/agents';

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

export const exchangeTool = tool({
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
    additionalProperties: false,
  },
  // A JSON Schema's arguments reach execute as parsed JSON, unchecked (as agent.ts's JSON.parse).
  execute: async (args) => exchange(args as ExchangeArgs),
});

export const currencyAgent = new Agent({ name: 'Currency agent', instructions: SYSTEM, tools: [exchangeTool] });

/** The question of a dataset row: its last user message. */
function question(row: { messages: { role: string; content: unknown }[] }): string {
  const user = row.messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

export default async function runCurrencyAgent(
  row: { messages: { role: string; content: unknown }[] },
  { baseURL, apiKey, model, signal }: { baseURL: string; apiKey: string; model: string; signal: AbortSignal },
): Promise<string> {
  const runner = new Runner({
    model,
    modelProvider: new OpenAIProvider({ baseURL, apiKey, useResponses: false }),
    tracingDisabled: true,
  });
  const result = await runner.run(currencyAgent, question(row), {
    maxTurns: 3,
    signal,
    // A third answer that still calls the tool ends the run with no answer, as agent.ts's loop does,
    // rather than with the SDK's MaxTurnsExceededError.
    errorHandlers: { maxTurns: () => ({ finalOutput: '' }) },
  });
  return result.finalOutput ?? '';
}
