/**
 * The validators of every request schema (gateway/contract/), by the name
 * REQUEST_SCHEMAS gives it, for tests that check a schema without a route around it:
 * ajv compiles each schema once, so these are the routes' own compiled functions.
 */
import { REQUEST_SCHEMAS, type RequestSchemaName } from '../../gateway/contract';
import { NoParameters } from '../../gateway/contract-schema';
import { validator, type Validator } from '../../gateway/validate';

/** Parameters are named `…Path` or `…Query`; every other schema is a body. */
const rootOf = (name: string): 'body' | 'path' | 'query' => (name.endsWith('Path') ? 'path' : name.endsWith('Query') ? 'query' : 'body');

type Validators = Record<RequestSchemaName | 'noParameters', Validator<unknown>>;

export const schemas = {
  ...Object.fromEntries(Object.entries(REQUEST_SCHEMAS).map(([name, schema]) => [name, validator(schema, rootOf(name))])),
  noParameters: validator(NoParameters, 'query'),
} as Validators;
