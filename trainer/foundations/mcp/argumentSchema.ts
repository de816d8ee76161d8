import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import type { JsonSchema, ParametersSchema } from '../tools/schema';
import { ToolDefinitionError } from '../tools/toolErrors';

/**
 * An MCP tool's arguments are described by the server as JSON Schema, not zod. The policy's
 * arguments are checked against that schema with Ajv (the validator the MCP SDK itself uses)
 * before the call goes out, so a bad call becomes an `invalid_arguments` observation naming the
 * field — exactly as for our own tools — instead of a round trip and the server's own wording.
 *
 * The check is wrapped as a zod object schema (a loose object refined by Ajv), because the
 * ToolRunner, Run Tool… and the argument box all validate through `tool.parameters`.
 */

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

/** One validator per dialect; `strict: false` because servers put annotations (`title`, vendor keys) in their schemas. */
const validators = new Map<string, AnyAjv>();

function ajvFor(dialect: string | undefined): AnyAjv {
  const key = dialect?.includes('2020-12') ? '2020' : dialect?.includes('2019-09') ? '2019' : '07';
  let ajv = validators.get(key);
  if (!ajv) {
    const options = { strict: false, allErrors: true, validateSchema: true };
    ajv = key === '2020' ? new Ajv2020(options) : key === '2019' ? new Ajv2019(options) : new Ajv(options);
    addFormats(ajv as Ajv);
    validators.set(key, ajv);
  }
  return ajv;
}

/** `/items/0/name` → ['items', 0, 'name'] (JSON Pointer, RFC 6901). */
function pointerPath(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^(0|[1-9]\d*)$/.test(part) ? Number(part) : part));
}

/** Ajv's error as one readable line: what was expected, and for a missing or extra key, which. */
function describeAjvError(error: ErrorObject): { path: (string | number)[]; message: string } {
  const path = pointerPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') return { path: [...path, String(params['missingProperty'])], message: 'required' };
  if (error.keyword === 'additionalProperties')
    return { path: [...path, String(params['additionalProperty'])], message: 'is not allowed here' };
  if (error.keyword === 'enum') return { path, message: `must be one of ${JSON.stringify(params['allowedValues'])}` };
  return { path, message: error.message ?? error.keyword };
}

/**
 * A zod schema that accepts exactly what `schema` accepts. Throws a ToolDefinitionError naming
 * the tool when the server's schema does not compile.
 */
export function argumentsFromJsonSchema(toolName: string, schema: JsonSchema): ParametersSchema {
  let validate: ValidateFunction;
  try {
    validate = ajvFor(typeof schema['$schema'] === 'string' ? schema['$schema'] : undefined).compile(schema);
  } catch (error) {
    throw new ToolDefinitionError(
      `tool "${toolName}": its input schema is not valid JSON Schema (${(error as Error).message})`,
    );
  }
  return z.looseObject({}).superRefine((value, ctx) => {
    if (validate(value)) return;
    for (const error of validate.errors ?? []) {
      const { path, message } = describeAjvError(error);
      ctx.addIssue({ code: 'custom', path, message });
    }
  });
}
