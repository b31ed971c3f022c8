/**
 * How a route declares what it accepts and answers: TypeBox (docs/decisions.md "The
 * contract in TypeBox"), whose values are plain JSON Schema 2020-12 objects — ajv
 * compiles them as they are (validate.ts), the OpenAPI document embeds the very same
 * objects (openapi.ts), the handler's input type is derived from them (`Validated`) and
 * the presenters' output types too (`Static`), so a route's parameters, query, body and
 * answers are written once, in gateway/contract/, beside its handler in gateway/routes/.
 *
 * Limits and enumerations shared with the services are read from the .proto rules and
 * enum descriptors (proto-rules.ts, public-enums.ts) instead of being repeated.
 */
import { OptionalKind, Type, type Static, type TObject, type TOptional, type TProperties, type TSchema } from '@sinclair/typebox';

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

/** A `$ref` to the document's component `name`, typed as the schema it names. */
export function componentRef<T extends TSchema>(name: string, _schema: T) {
  return Type.Unsafe<Static<T>>({ $ref: `#/components/schemas/${name}` });
}

/** `schema` or `null` (`type: [<its type>, "null"]`, as OpenAPI 3.1 writes it). */
export function nullable<T extends TSchema>(schema: T) {
  const { type } = schema as { type?: unknown };
  if (typeof type !== 'string') throw new Error('nullable(): the schema has no single type');
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] });
}

/** An optional property's schema as a required one (a request's optional field that an answer always has). */
export function present<T extends TSchema>(schema: TOptional<T>): T {
  const { [OptionalKind]: _optional, ...rest } = schema as TOptional<T> & Record<symbol, unknown>;
  return rest as unknown as T;
}
