import { z } from 'zod';
import { Tool } from '../tool';
import type { ToolResult } from '../result';
import { evaluateArithmetic, formatNumber } from './arithmetic';

const CalculatorArgs = z.object({
  expression: z
    .string()
    .min(1)
    .describe(
      'An arithmetic expression, e.g. "(48213 * 97) - 1204 / 4". Operators: + - * / % ^, parentheses; functions: sqrt, abs, round, floor, ceil, exp, ln, log10, log2, min, max, pow.',
    ),
});

export interface CalculatorOptions {
  name?: string;
  description?: string;
}

/** Evaluates arithmetic safely (a parser, never `eval`); see arithmetic.ts for the grammar. */
export class CalculatorTool extends Tool<typeof CalculatorArgs> {
  readonly name: string;
  readonly description: string;
  readonly parameters = CalculatorArgs;

  constructor(options: CalculatorOptions = {}) {
    super();
    this.name = options.name ?? 'calculator';
    this.description = options.description ?? 'Evaluate an arithmetic expression exactly and return the number.';
  }

  execute({ expression }: z.output<typeof CalculatorArgs>): ToolResult<{ value: number }> {
    // An ArithmeticError propagates: the runner records it as `threw` and the policy reads its message.
    const value = evaluateArithmetic(expression);
    return { content: [{ type: 'text', text: formatNumber(value) }], data: { value } };
  }
}
