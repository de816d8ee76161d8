import { z } from 'zod';
import { ToolDefinitionError } from './toolErrors';

/**
 * A tool's zod schema as the JSON Schema a chat template puts in the prompt, converted by zod's
 * own `z.toJSONSchema` and then cleaned so that it reads like the schemas the model saw in
 * training (transformers' `get_json_schema`, OpenAI function specs):
 *
 * - converted for the *input* side (`io: 'input'`): the model writes the input, so a field with
 *   a `.default()` is optional, and no `additionalProperties: false` is emitted (zod strips
 *   unknown keys rather than refusing them, so saying "no other keys" would be untrue);
 * - `$schema` (the dialect URL) is removed;
 * - `minimum: -9007199254740991` / `maximum: 9007199254740991`, which zod adds to every `.int()`
 *   (the safe-integer range), are removed: they tell the model nothing and cost ~20 tokens each.
 *   Bounds the user set (`.min(1)`, `.max(50)`) stay.
 *
 * Everything else (descriptions, enums, defaults, string formats, nested objects) is kept in
 * zod's order.
 */

/** Any zod object schema (strict, loose or stripping). */
export type ParametersSchema = z.ZodObject<z.core.$ZodLooseShape, z.core.$ZodObjectConfig>;

export type JsonSchema = Record<string, unknown>;

const SAFE_INTEGER_BOUNDS: Record<string, number> = {
  minimum: -Number.MAX_SAFE_INTEGER,
  maximum: Number.MAX_SAFE_INTEGER,
};

/** Whether `value` is a zod 4 object schema (from this zod or another copy of zod 4). */
export function isZodObjectSchema(value: unknown): value is ParametersSchema {
  if (typeof value !== 'object' || value === null) return false;
  const internals = (value as { _zod?: { def?: { type?: unknown } } })._zod;
  return typeof (value as { safeParse?: unknown }).safeParse === 'function' && internals?.def?.type === 'object';
}

export function parametersJsonSchema(toolName: string, schema: ParametersSchema): JsonSchema {
  let converted: JsonSchema;
  try {
    converted = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'throw' }) as JsonSchema;
  } catch (error) {
    throw new ToolDefinitionError(
      `tool "${toolName}": parameters cannot be written as JSON Schema for the chat template (${(error as Error).message}); ` +
        'use JSON types (string, number, boolean, enum, array, object) in the arguments schema and convert inside execute()',
    );
  }
  const { $schema: _dialect, ...rest } = converted;
  return clean(rest) as JsonSchema;
}

function clean(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(clean);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key in SAFE_INTEGER_BOUNDS && child === SAFE_INTEGER_BOUNDS[key]) continue;
    out[key] = clean(child);
  }
  return out;
}
