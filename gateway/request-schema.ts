/**
 * How a route declares what it accepts: TypeBox (docs/decisions.md "Request schemas in
 * TypeBox"), whose values are plain JSON Schema 2020-12 objects — ajv compiles them as
 * they are (validate.ts), the OpenAPI document embeds the very same objects
 * (openapi.ts), and the handler's input type is derived from them (`Validated`), so a
 * route's parameters, query and body are written once, beside its handler in
 * gateway/routes/.
 *
 * Limits and enumerations shared with the services are read from the .proto rules and
 * enum descriptors (proto-rules.ts, public-enums.ts) instead of being repeated.
 */
import { Type, type Static, type TObject, type TOptional, type TProperties, type TSchema } from '@sinclair/typebox';

/** The JSON Schema dialect every request schema is written in. */
const DIALECT = 'https://json-schema.org/draft/2020-12/schema';

declare const FILLED: unique symbol;

/** An optional property that validation fills with its schema's `default` when absent. */
export type TFilled<T extends TSchema> = TOptional<T> & { readonly [FILLED]: true };

/** Marks `schema` (which must carry a `default`) as an optional property validation fills in. */
export function filled<T extends TSchema>(schema: T): TFilled<T> {
  if ((schema as { default?: unknown }).default === undefined) throw new Error('filled(): the schema has no default');
  return Type.Optional(schema) as TFilled<T>;
}

type FilledKeys<P extends TProperties> = { [K in keyof P]: P[K] extends { readonly [FILLED]: true } ? K : never }[keyof P];

/** The shape a document of schema `S` has once validated: its `filled` properties are present. */
export type Validated<S extends TSchema> = S extends TObject<infer P> ? Static<S> & { [K in FilledKeys<P>]-?: Static<P[K]> } : Static<S>;

/** A string that is one of `names` (an enumeration read from a proto enum's descriptor). */
export function oneOfNames<N extends string>(names: readonly N[], options: Record<string, unknown> = {}) {
  return Type.Unsafe<N>({ type: 'string', enum: [...names], ...options });
}

/** A closed object: unknown properties are refused (`unknown_field`). */
export function closed<P extends TProperties>(properties: P, options: Record<string, unknown> = {}): TObject<P> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

/**
 * A request body's schema: a closed object with the dialect, an `$id` under the
 * contract's schema namespace, a title and a description (what the OpenAPI document
 * shows for it).
 */
export function requestBody<P extends TProperties>(id: string, title: string, description: string, properties: P, options: Record<string, unknown> = {}): TObject<P> {
  return Type.Object(properties, {
    $schema: DIALECT,
    $id: `https://schemas.partner-sync.example/v1/${id}.json`,
    title,
    description,
    additionalProperties: false,
    ...options,
  });
}

/** A route without path parameters or without query parameters (any given is `unknown_field`). */
export const NoParameters = closed({});
