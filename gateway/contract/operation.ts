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

/** An example of a problem response: the request and the violations or conflicts; its value is rendered from the response's code (`code`: which one, where the response has several). */
export interface ProblemExample {
  summary: string;
  code?: ProblemCode;
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

/**
 * The problem response of `codes` (one, or several sharing a status): a problem document
 * whose `code` is one of them, with their status (and `errors` / `conflicts` where
 * problems.ts always renders them).
 */
export function problem(codes: ProblemCode | ProblemCode[], description: string, extraHeaders?: Part): Part {
  const list = typeof codes === 'string' ? [codes] : codes;
  const status = PROBLEM_CODES[list[0]!].status;
  if (list.some((c) => PROBLEM_CODES[c].status !== status)) throw new Error(`openapi: ${list.join(', ')} do not share a status`);
  const always = list.includes('validation_failed') ? ['errors'] : list.includes('conflict') ? ['conflicts'] : undefined;
  const code = list.length === 1 ? { const: list[0] } : { enum: list };
  const own = { type: 'object', properties: { code, status: { const: status } }, ...(always && { required: always }) };
  return { description, headers: headers(extraHeaders), content: { 'application/problem+json': { schema: { allOf: [schemaRef('Problem'), own] } } } };
}

/** The shared response (components-responses.ts) of a problem code: its name is the code in PascalCase. */
export function problemRef(code: ProblemCode): Part {
  return responseRef(code.replace(/(^|_)([a-z])/g, (_, _sep: string, letter: string) => letter.toUpperCase()));
}

/** What every contract operation may answer besides its own problems, in the order of the checks and then the faults. */
const EVERY_OPERATION: Record<string, ProblemCode> = {
  401: 'unauthorized',
  429: 'rate_limited',
  403: 'workspace_scope_mismatch',
  501: 'not_enabled',
  500: 'internal_error',
  503: 'service_unavailable',
};

/**
 * The problem responses of a contract operation by status: the ones every operation has,
 * then its own — a code answered by its shared response, or a response of its own
 * (`problem`, for its own description or examples). Statuses sort as numbers.
 */
export function problems(own: Record<string, ProblemCode | Part>): Record<string, Part> {
  const all = { ...EVERY_OPERATION, ...own };
  return Object.fromEntries(Object.entries(all).map(([status, r]) => [status, typeof r === 'string' ? problemRef(r) : r]));
}

/** A path's `x-other-methods`: the `Allow` the router answers for another method, with `405 method_not_allowed`. */
export function otherMethods(allow: string): Part {
  return { allow, response: problemRef('method_not_allowed') };
}

/**
 * An operation's `x-codeSamples`: the curl command sending `method` to `$BASE_URL<target>`
 * with the bearer `credential` (none for the document itself). `withExamples` adds the
 * body of a JSON request: its first request example.
 */
export function curl(method: string, target: string, credential: 'ACCESS_TOKEN' | 'API_KEY' | null = 'ACCESS_TOKEN'): Part[] {
  const auth = credential ? ` \\\n  -H "Authorization: Bearer $${credential}"` : '';
  return [{ lang: 'Shell', label: 'curl', source: `curl -X ${method} "$BASE_URL${target}"${auth}` }];
}

/** The curl command of `samples` sending `body` as JSON (single-quoted for the shell). */
function withBody(samples: Part[], body: unknown): Part[] {
  const json = JSON.stringify(body).replace(/'/g, "'\\''");
  return samples.map((sample) => ({ ...sample, source: `${String(sample.source)} \\\n  -H 'Content-Type: application/json' \\\n  --data '${json}'` }));
}

/** The codes a `problem` response declares, if `media` is one. */
function problemCodes(media: Part): ProblemCode[] | undefined {
  const code = (media.schema as { allOf?: { properties?: { code?: { const?: ProblemCode; enum?: ProblemCode[] } } }[] } | undefined)?.allOf?.[1]?.properties?.code;
  return code?.const ? [code.const] : code?.enum;
}

/** The one media type of `content` (every body and response with examples has one). */
function onlyMedia(content: unknown, where: string): [string, Part] {
  const media = Object.entries((content ?? {}) as Record<string, Part>);
  if (media.length !== 1) throw new Error(`openapi: ${where} has no single media type for its examples`);
  return media[0]!;
}

/** `examples` of a problem response, each with the document problems.ts renders for the response's code as its value. */
function rendered(codes: ProblemCode[], examples: NamedExamples, where: string): NamedExamples {
  const out: NamedExamples = {};
  for (const [name, example] of Object.entries(examples)) {
    const { summary, code = codes.length === 1 ? codes[0]! : undefined, 'x-request': request, errors, conflicts, ...rest } = example as unknown as ProblemExample;
    if (Object.keys(rest).length > 0) throw new Error(`openapi: ${where} ${name} is a problem example: only summary, code, x-request, errors and conflicts`);
    if (!code || !codes.includes(code)) throw new Error(`openapi: ${where} ${name} names no code of its response (${codes.join(', ')})`);
    const value = problemDocument(new ProblemError(code, { ...(errors && { errors }), ...(conflicts && { conflicts }) }), DOCS_URL, EXAMPLE_REQUEST_ID);
    out[name] = { summary, ...(request && { 'x-request': request }), value };
  }
  return out;
}

/** A copy of `body` (a request body or a response) with `examples` in its one media type. */
export function exampled(body: Part, examples: NamedExamples, where = 'response'): Part {
  const [type, media] = onlyMedia(body.content, where);
  const codes = problemCodes(media);
  return { ...body, content: { [type]: { ...media, examples: codes ? rendered(codes, examples, where) : examples } } };
}

/** Operation `op` with its examples in place: the request body's (also the curl sample's body), and each response's (a response of its own, not a `$ref`). */
export function withExamples(op: Part, examples: OperationExamples): Part {
  const where = String(op.operationId);
  const responses = { ...(op.responses as Record<string, Part>) };
  for (const [status, named] of Object.entries(examples.responses ?? {})) {
    const response = responses[status];
    if (!response || response.$ref) throw new Error(`openapi: ${where} ${status} is not a response of its own to put examples in`);
    responses[status] = exampled(response, named, `${where} ${status}`);
  }
  const requestBody = examples.request ? exampled(op.requestBody as Part, examples.request, `${where} request body`) : (op.requestBody as Part | undefined);
  // The body is sent only where it is read: a JSON request body (the token endpoint's is ignored).
  const sent: Part | undefined = (requestBody?.content as Part | undefined)?.['application/json'] ? Object.values(examples.request ?? {})[0] : undefined;
  const samples = op['x-codeSamples'] as Part[] | undefined;
  return { ...op, ...(samples && { 'x-codeSamples': sent ? withBody(samples, sent.value) : samples }), ...(requestBody && { requestBody }), responses };
}
