/** The keys of `T` whose value may be `undefined`. */
type MaybeUndefinedKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];

/** `T` with every field that may be `undefined` made optional instead (and never `undefined`). */
export type DefinedFields<T> = {
  [K in Exclude<keyof T, MaybeUndefinedKeys<T>>]: T[K];
} & { [K in MaybeUndefinedKeys<T>]?: Exclude<T[K], undefined> };

/**
 * The object without its `undefined` fields: how an optional field is set from a value that may
 * be missing. The key is absent, not present with `undefined`, so the record compares, spreads
 * over defaults and crosses a worker exactly as if it had never been written — the one way to do
 * this under `exactOptionalPropertyTypes` instead of `...(x !== undefined ? { k: x } : {})`.
 */
export function definedFields<T extends object>(fields: T): DefinedFields<T> {
  const defined: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) defined[key] = value;
  return defined as DefinedFields<T>;
}
