/**
 * How the OpenAPI document's operations and shared components are declared
 * (gateway/contract/<group>-operations.ts, components-*.ts): plain objects, with these
 * helpers where the document repeats itself. A problem response names its code once
 * (`problem`), and its examples are the documents problems.ts renders for that code,
 * so an example cannot disagree with the gateway's rendering.
 */
import { PROBLEM_CODES, problemDocument, ProblemError, type ProblemCode, type Violation } from '../problems';
import { DOCS_URL, EXAMPLE_REQUEST_ID } from './document-values';

/** A part of the document as declared: JSON, except that a schema may be a TypeBox object (JSON Schema whose symbol keys JSON ignores). */
export type Part = { [key: string]: unknown };

/** The paths (and, for the Webhooks tag, the webhooks) of one tag. */
export interface TagOperations {
  paths: Record<string, Part>;
  webhooks?: Record<string, Part>;
}

/** An example of a problem response: the request and the violations or conflicts; its value is rendered from the response's code. */
export interface ProblemExample {
  summary: string;
  'x-request'?: Part;
  errors?: Violation[];
  conflicts?: string[];
}

/** Example Objects by name; those of a problem response are `ProblemExample`s. */
export type NamedExamples = Record<string, Part>;

/** The examples of one operation: its request body's, and its responses' by status. */
export interface OperationExamples {
  request?: NamedExamples;
  responses?: Record<string, NamedExamples>;
}

const ref = (kind: string) => (name: string) => ({ $ref: `#/components/${kind}/${name}` });
export const responseRef = ref('responses');
export const parameterRef = ref('parameters');
export const headerRef = ref('headers');
export const schemaRef = ref('schemas');

/** The headers of every answer of the contract. */
const EVERY_ANSWER = ['RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit', 'X-Request-Id', 'Cache-Control'];

/** The headers every answer carries, then `extra`. */
export function headers(extra: Part = {}): Part {
  return { ...Object.fromEntries(EVERY_ANSWER.map((name) => [name, headerRef(name)])), ...extra };
}

/** A `200`-style answer: `description`, the usual headers, and the JSON body of component schema `schema`. */
export function answer(description: string, schema: string): Part {
  return { description, headers: headers(), content: { 'application/json': { schema: schemaRef(schema) } } };
}

/** The problem response of `code`: the problem document with that `code` and its status (and `errors` / `conflicts` where problems.ts always renders them). */
export function problem(code: ProblemCode, description: string, extraHeaders?: Part): Part {
  const always = code === 'validation_failed' ? ['errors'] : code === 'conflict' ? ['conflicts'] : undefined;
  const own = { type: 'object', properties: { code: { const: code }, status: { const: PROBLEM_CODES[code].status } }, ...(always && { required: always }) };
  return { description, headers: headers(extraHeaders), content: { 'application/problem+json': { schema: { allOf: [schemaRef('Problem'), own] } } } };
}

/** The code a `problem` response declares, if `response` is one. */
function problemCode(media: Part): ProblemCode | undefined {
  const allOf = (media.schema as { allOf?: { properties?: { code?: { const?: ProblemCode } } }[] } | undefined)?.allOf;
  return allOf?.[1]?.properties?.code?.const;
}

/** The one media type of `content` (every body and response with examples has one). */
function onlyMedia(content: unknown, where: string): [string, Part] {
  const media = Object.entries((content ?? {}) as Record<string, Part>);
  if (media.length !== 1) throw new Error(`openapi: ${where} has no single media type for its examples`);
  return media[0]!;
}

/** `examples` of a problem response, each with the document problems.ts renders for the response's code as its value. */
function rendered(code: ProblemCode, examples: NamedExamples, where: string): NamedExamples {
  const out: NamedExamples = {};
  for (const [name, example] of Object.entries(examples)) {
    const { summary, 'x-request': request, errors, conflicts, ...rest } = example as unknown as ProblemExample;
    if (Object.keys(rest).length > 0) throw new Error(`openapi: ${where} ${name} is a problem example: only summary, x-request, errors and conflicts`);
    const value = problemDocument(new ProblemError(code, { ...(errors && { errors }), ...(conflicts && { conflicts }) }), DOCS_URL, EXAMPLE_REQUEST_ID);
    out[name] = { summary, ...(request && { 'x-request': request }), value };
  }
  return out;
}

/** A copy of `body` (a request body or a response) with `examples` in its one media type. */
export function exampled(body: Part, examples: NamedExamples, where = 'response'): Part {
  const [type, media] = onlyMedia(body.content, where);
  const code = problemCode(media);
  return { ...body, content: { [type]: { ...media, examples: code ? rendered(code, examples, where) : examples } } };
}

/** Operation `op` with its examples in place: the request body's, and each response's (a response of its own, not a `$ref`). */
export function withExamples(op: Part, examples: OperationExamples): Part {
  const where = String(op.operationId);
  const responses = { ...(op.responses as Record<string, Part>) };
  for (const [status, named] of Object.entries(examples.responses ?? {})) {
    const response = responses[status];
    if (!response || response.$ref) throw new Error(`openapi: ${where} ${status} is not a response of its own to put examples in`);
    responses[status] = exampled(response, named, `${where} ${status}`);
  }
  const requestBody = examples.request ? exampled(op.requestBody as Part, examples.request, `${where} request body`) : (op.requestBody as Part | undefined);
  return { ...op, ...(requestBody && { requestBody }), responses };
}
