import { defineTool, z } from 'rollout-studio';

/** Today's rates: units of each currency per US dollar. */
export const RATES = { USD: 1, EUR: 0.9215, GBP: 0.7871, JPY: 151.37, CHF: 0.8823, CAD: 1.3642, AUD: 1.5208 };
export type Currency = keyof typeof RATES;
export const CURRENCIES = Object.keys(RATES) as [Currency, ...Currency[]];

export function exchange(amount: number, from: Currency, to: Currency): string {
  return ((amount / RATES[from]) * RATES[to]).toFixed(2);
}

export const exchangeTool = defineTool({
  name: 'exchange',
  description: "Convert an amount of money from one currency to another at today's rate.",
  parameters: z.object({
    amount: z.number().describe('How much money'),
    from: z.enum(CURRENCIES).describe('The currency the amount is in'),
    to: z.enum(CURRENCIES).describe('The currency to convert to'),
  }),
  execute: ({ amount, from, to }) => exchange(amount, from, to),
});

export const tools = [exchangeTool];
