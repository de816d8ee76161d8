/** The calculator example's one tool: the built-in calculator (a safe arithmetic parser, no eval). */
import { CalculatorTool } from 'rollout-studio';

export const calculator = new CalculatorTool({
  description: 'Evaluate an arithmetic expression exactly. Use it for every multiplication, division or long sum.',
});

export const tools = [calculator];
