/**
 * The text in Run Tool…'s argument box: a starting point made from the tool's JSON Schema (every
 * required field, with its default, first enum value or an empty value of its type), and the
 * message shown under the box while the text is not valid JSON.
 */

type Schema = Record<string, unknown>;

function exampleValue(schema: Schema): unknown {
  if ('default' in schema) return schema['default'];
  if (Array.isArray(schema['enum']) && schema['enum'].length) return schema['enum'][0];
  if ('const' in schema) return schema['const'];
  const type = Array.isArray(schema['type']) ? schema['type'][0] : schema['type'];
  switch (type) {
    case 'string':
      return '';
    case 'number':
    case 'integer':
      return typeof schema['minimum'] === 'number' ? schema['minimum'] : 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return argumentSkeleton(schema);
    case 'null':
      return null;
    default:
      return null;
  }
}

/** `{ "query": "" }` for `{ query: z.string() }`; optional fields are left out. */
export function argumentSkeleton(parameters: Schema): Record<string, unknown> {
  const properties = (parameters['properties'] ?? {}) as Record<string, Schema>;
  const required = Array.isArray(parameters['required']) ? (parameters['required'] as string[]) : [];
  return Object.fromEntries(
    required.filter((name) => properties[name]).map((name) => [name, exampleValue(properties[name])]),
  );
}

export type ParsedArguments = { ok: true; value: unknown } | { ok: false; message: string };

/** The box's text as JSON; the message says where it stops being JSON. */
export function parseArgumentText(text: string): ParsedArguments {
  if (text.trim() === '') return { ok: false, message: 'Type the arguments as a JSON object, e.g. {"query": "…"}' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${(error as Error).message}` };
  }
}
