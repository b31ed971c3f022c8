/**
 * Walking the examples of the OpenAPI document (gateway/openapi.ts, committed as
 * docs/openapi.json), for the tests that validate them (openapi.test.ts) and send them
 * to a running system (openapi-examples.test.ts).
 *
 * - A request example and the response example of the same name belong together: the
 *   response's status is what the request gets.
 * - An error example whose request cannot be a (valid) request example carries it in
 *   `x-request` (`path`, `query`, `body`).
 * - Parameters a request does not give take the parameters' own examples.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { storableDate, storableDateTime } from '../../gateway/instant-formats';

export type Doc = any;

export const METHODS = ['get', 'put', 'post', 'delete'] as const;

/** `urn:psync:openapi` + JSON Pointer of `segments`. */
export function pointer(...segments: (string | number)[]): string {
  return `urn:psync:openapi#/${segments.map((s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

export interface Operation {
  /** `PUT /blocks/{external_uid}`, or `WEBHOOK booking.confirmed`. */
  key: string;
  /** JSON Pointer segments of the operation object. */
  at: string[];
  path: string;
  method: string;
  op: any;
  /** Path-level and operation-level parameters, resolved. */
  parameters: any[];
}

/** Follows a local `$ref` (one level is all the document uses), returning the target and its pointer segments. */
export function resolve(doc: Doc, obj: any, at: string[]): { value: any; at: string[] } {
  if (obj && typeof obj.$ref === 'string') {
    const segs = obj.$ref
      .replace(/^#\//, '')
      .split('/')
      .map((s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    return { value: segs.reduce((o: any, s: string) => o[s], doc), at: segs };
  }
  return { value: obj, at };
}

/** Every operation of the document: paths first, then webhooks. */
export function operations(doc: Doc): Operation[] {
  const out: Operation[] = [];
  for (const [root, label] of [
    ['paths', ''],
    ['webhooks', 'WEBHOOK '],
  ] as const) {
    for (const [path, item] of Object.entries<any>(doc[root] ?? {})) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: any) => resolve(doc, p, []).value);
        out.push({ key: label ? `${label}${path}` : `${method.toUpperCase()} ${path}`, at: [root, path, method], path, method, op, parameters });
      }
    }
  }
  return out;
}

export interface MediaExample {
  name: string;
  example: any;
  /** Pointer segments of the media type object (its `schema` is the example's schema). */
  mediaAt: string[];
  mediaType: string;
}

export interface ResponseExample extends MediaExample {
  status: string;
  response: any;
}

export function requestExamples(op: Operation): MediaExample[] {
  const content = op.op.requestBody?.content ?? {};
  return Object.entries(content).flatMap(([mediaType, media]: [string, any]) =>
    Object.entries(media.examples ?? {}).map(([name, example]) => ({ name, example, mediaType, mediaAt: [...op.at, 'requestBody', 'content', mediaType] })),
  );
}

export function responseExamples(doc: Doc, op: Operation): ResponseExample[] {
  const out: ResponseExample[] = [];
  for (const [status, r] of Object.entries<any>(op.op.responses ?? {})) {
    const { value: response, at } = resolve(doc, r, [...op.at, 'responses', status]);
    for (const [mediaType, media] of Object.entries<any>(response.content ?? {})) {
      for (const [name, example] of Object.entries(media.examples ?? {})) {
        out.push({ status, name, example, mediaType, mediaAt: [...at, 'content', mediaType], response });
      }
    }
  }
  return out;
}

/** The request an example name stands for: its parameters (defaults: the parameters' examples) and body. */
export interface ExampleCall {
  method: string;
  /** The path under `/v1`, parameters filled in and percent-encoded. */
  url: string;
  body?: unknown;
}

export function exampleCall(op: Operation, name: string, xRequest?: { path?: Record<string, string>; query?: Record<string, string>; body?: unknown }): ExampleCall {
  const bodyExample = requestExamples(op).find((e) => e.name === name);
  const pathValues: Record<string, string> = {};
  const query: Record<string, string> = {};
  for (const p of op.parameters) {
    if (p.in === 'path') pathValues[p.name] = String(p.example);
    if (p.in === 'query' && p.example !== undefined) query[p.name] = String(p.example);
  }
  Object.assign(pathValues, xRequest?.path ?? {});
  Object.assign(query, xRequest?.query ?? {});
  const path = op.path.replace(/\{([a-z_]+)\}/g, (_, n: string) => encodeURIComponent(pathValues[n]!));
  const qs = new URLSearchParams(query).toString();
  const body = bodyExample ? bodyExample.example.value : xRequest?.body;
  return { method: op.method.toUpperCase(), url: `/v1${path}${qs ? `?${qs}` : ''}`, ...(body === undefined ? {} : { body }) };
}

/**
 * ajv as the gateway sets it up (gateway/validate.ts: JSON Schema 2020-12, formats,
 * only storable dates and instants, its two annotation keywords), holding the whole
 * document as one schema so any part is reachable by pointer. Not strict: the
 * document's own keywords (`openapi`, `paths`, `example`, …) are not JSON Schema.
 */
export function documentAjv(doc: Doc): { ajv: Ajv2020; schemaAt(segments: string[]): ValidateFunction } {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat('date', storableDate);
  ajv.addFormat('date-time', storableDateTime);
  ajv.addKeyword({ keyword: 'x-error-field', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-error-code', schemaType: 'string' });
  ajv.addSchema(doc, 'urn:psync:openapi');
  return {
    ajv,
    schemaAt(segments) {
      const fn = ajv.getSchema(pointer(...segments));
      if (!fn) throw new Error(`no schema at ${pointer(...segments)}`);
      return fn;
    },
  };
}
