/** The task's one tool: convert a value between two units of the same dimension. */
import { defineTool, z } from 'rollout-studio';
import { convert, UNIT_NAMES } from './units';

export const convertUnits = defineTool({
  name: 'convert_units',
  description: 'Convert a value from one unit to another unit of the same kind (length, mass, volume or temperature).',
  parameters: z.object({
    value: z.number().describe('The amount to convert.'),
    from_unit: z.enum(UNIT_NAMES).describe('The unit the value is in.'),
    to_unit: z.enum(UNIT_NAMES).describe('The unit to convert to.'),
  }),
  execute: ({ value, from_unit, to_unit }) => String(convert(value, from_unit, to_unit)),
});

export const tools = [convertUnits];
