/**
 * The currency agent of agent.ts as people write it on LangChain.js: a `tool()`, a `ChatOpenAI`
 * with the tool bound (`bindTools`), and the tool-calling loop of LangChain's guides — invoke,
 * run each of the answer's `tool_calls` (the tool's `invoke` makes the `ToolMessage`), invoke
 * again — at most 3 model calls, as agent.ts. LangChain's ready-made agent loop (`createAgent`)
 * lives in the `langchain` package, not in `@langchain/core`, hence the loop written out.
 *
 * ChatOpenAI speaks Chat Completions unless told to use the Responses API (or given a model or a
 * feature only that API has), so `configuration.baseURL` points it at the session's endpoint as
 * it would at any OpenAI-compatible server. It is not given `streaming: true`: `invoke` then
 * estimates token usage with tiktoken, which downloads its tables from tiktoken.pages.dev, and on
 * a machine offline each estimate waits through minutes of retries (`.stream()` does not).
 *
 * The tool's schema is JSON Schema, not zod: LangChain turns a zod object into JSON Schema with
 * `$schema` and `additionalProperties: false` added, and those land in the prompt the model reads,
 * which would then differ from agent.ts's and from the warm start's demonstrations (settings.ts).
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';

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

export const exchangeTool = tool(async (args) => exchange(args as ExchangeArgs), {
  name: 'exchange',
  description: "Convert an amount of money from one currency to another at today's rate.",
  schema: {
    type: 'object',
    properties: {
      amount: { type: 'number', description: 'How much money' },
      from: { type: 'string', enum: CURRENCIES, description: 'The currency the amount is in' },
      to: { type: 'string', enum: CURRENCIES, description: 'The currency to convert to' },
    },
    required: ['amount', 'from', 'to'],
  },
});

/** The question of a dataset row: its last user message. */
function question(row: { messages: { role: string; content: unknown }[] }): string {
  const user = row.messages.filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
}

export default async function currencyAgent(
  row: { messages: { role: string; content: unknown }[] },
  { baseURL, apiKey, model, signal }: { baseURL: string; apiKey: string; model: string; signal: AbortSignal },
): Promise<string> {
  const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL } }).bindTools([exchangeTool]);
  const messages: BaseMessage[] = [new SystemMessage(SYSTEM), new HumanMessage(question(row))];
  for (let step = 0; step < 3; step++) {
    const reply: AIMessage = await llm.invoke(messages, { signal });
    messages.push(reply);
    if (!reply.tool_calls?.length) return reply.text;
    for (const call of reply.tool_calls) {
      // Invoked with the call itself, a tool answers with the ToolMessage that answers the call.
      messages.push(
        call.name === 'exchange'
          ? await exchangeTool.invoke(call)
          : new ToolMessage({ content: 'Error: no such tool', tool_call_id: call.id ?? '' }),
      );
    }
  }
  return '';
}
