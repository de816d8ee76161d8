/**
 * A JSON Schema reduced to what a grammar can enforce while the policy writes a value: the
 * shapes below. Everything the grammar cannot enforce (numeric bounds, string patterns and
 * formats, `allOf`, `$ref`) is left to the tool's own schema check after the call is read, so a
 * constrained call always parses but may still be refused with a clear error.
 *
 * Deliberate choices, as grammar-constrained decoders make them (llama.cpp's json-schema-to-grammar,
 * xgrammar's strict mode):
 * - an object with declared `properties` takes only those keys, each at most once, in any order,
 *   and cannot close before its `required` keys are written — extra keys are never generated;
 * - an object without declared properties takes any keys, with values of any JSON type;
 * - values of unknown or unsupported schema are any JSON value, nested at most `ANY_DEPTH` deep.
 */

export type ValueShape =
  | { kind: 'any'; id: number; depth: number }
  | {
      kind: 'object';
      id: number;
      properties: { key: Uint8Array; shape: ValueShape }[];
      required: number[];
      additional?: ValueShape;
    }
  | { kind: 'array'; id: number; items: ValueShape; minItems: number; maxItems: number }
  | { kind: 'string'; id: number; minLength: number; maxLength: number }
  | { kind: 'number'; id: number; integer: boolean }
  /** A fixed set of JSON texts: enums, consts, true/false, null. */
  | { kind: 'literals'; id: number; values: Uint8Array[] }
  | { kind: 'union'; id: number; options: ValueShape[] };

/** How deep an unconstrained value may nest. */
export const ANY_DEPTH = 3;

const utf8 = new TextEncoder();

/** Builds shapes with ids unique within one grammar (ids key the grammar's mask cache). */
export class ShapeBuilder {
  private next = 0;
  private readonly anyByDepth: ValueShape[] = [];

  id(): number {
    return this.next++;
  }

  any(depth = ANY_DEPTH): ValueShape {
    this.anyByDepth[depth] ??= { kind: 'any', id: this.id(), depth };
    return this.anyByDepth[depth];
  }

  literals(values: readonly unknown[]): ValueShape {
    return { kind: 'literals', id: this.id(), values: values.map((v) => utf8.encode(JSON.stringify(v))) };
  }

  /** The shape of a JSON Schema (a tool's `parameters`, or any part of one). */
  fromSchema(schema: unknown): ValueShape {
    if (
      schema === true ||
      schema === undefined ||
      schema === null ||
      typeof schema !== 'object' ||
      Array.isArray(schema)
    )
      return this.any();
    const s = schema as Record<string, unknown>;
    if ('const' in s) return this.literals([s.const]);
    if (Array.isArray(s.enum) && s.enum.length > 0) return this.literals(s.enum);
    const union = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined) as
      unknown[] | undefined;
    if (union?.length)
      return union.length === 1
        ? this.fromSchema(union[0])
        : { kind: 'union', id: this.id(), options: union.map((o) => this.fromSchema(o)) };
    if (Array.isArray(s.type)) {
      const options = s.type.map((t) => this.fromSchema({ ...s, type: t }));
      return options.length === 1 ? options[0] : { kind: 'union', id: this.id(), options };
    }
    switch (s.type) {
      case 'string':
        return {
          kind: 'string',
          id: this.id(),
          minLength: nonNegative(s.minLength, 0),
          maxLength: nonNegative(s.maxLength, Infinity),
        };
      case 'number':
      case 'integer':
        return { kind: 'number', id: this.id(), integer: s.type === 'integer' };
      case 'boolean':
        return this.literals([true, false]);
      case 'null':
        return this.literals([null]);
      case 'array':
        return {
          kind: 'array',
          id: this.id(),
          items: this.fromSchema(s.items),
          minItems: nonNegative(s.minItems, 0),
          maxItems: nonNegative(s.maxItems, Infinity),
        };
      case 'object':
        return this.object(s);
      default:
        return 'properties' in s ? this.object(s) : this.any();
    }
  }

  private object(s: Record<string, unknown>): ValueShape {
    const declared =
      typeof s.properties === 'object' && s.properties !== null
        ? Object.entries(s.properties as Record<string, unknown>)
        : [];
    if (declared.length === 0)
      return { kind: 'object', id: this.id(), properties: [], required: [], additional: this.any(ANY_DEPTH - 1) };
    const names = declared.map(([key]) => key);
    const required = Array.isArray(s.required)
      ? s.required.map((r) => names.indexOf(String(r))).filter((i) => i >= 0)
      : [];
    return {
      kind: 'object',
      id: this.id(),
      properties: declared.map(([key, child]) => ({
        key: utf8.encode(JSON.stringify(key)),
        shape: this.fromSchema(child),
      })),
      required,
    };
  }
}

function nonNegative(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : fallback;
}
