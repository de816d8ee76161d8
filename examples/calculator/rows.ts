/** The dataset rows of the calculator example. */
import { z, type DatasetRow } from 'rollout-studio';

export const CalculatorFields = z.object({
  /** The exact result, as digits (an integer, possibly negative). */
  answer: z.string().regex(/^-?\d+$/),
  /** The expression the question describes, in calculator syntax. */
  expression: z.string(),
});

export type CalculatorRow = DatasetRow<z.output<typeof CalculatorFields>>;

export const SYSTEM_PROMPT =
  'Solve the arithmetic problem. Use the calculator tool for the computation, then reply with <answer>the number</answer>.';
