/** What GET /v1/requests accepts (routes/requests.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { PAGE_SIZE_MAX } from '../../services/kit/base';
import { type Json } from '../json';
import { patternOf, rangeOf } from '../proto-rules';
import { closed, componentRef, nullable, type Validated } from '../contract-schema';
import { ListRequestsRequestSchema } from '../../gen/psync/identity/v1/identity_pb';
import { Limit } from './paging';

/** GET /v1/requests: filters by HTTP status and problem code, a limit, and the previous page's cursor. */
export const RequestsQuery = closed({
  status: Type.Optional(Type.Integer(rangeOf(ListRequestsRequestSchema, 'status'))),
  code: Type.Optional(Type.String({ pattern: '^[a-z][a-z_]{0,63}$' })),
  limit: Limit,
  after: Type.Optional(Type.String({ pattern: patternOf(ListRequestsRequestSchema, 'after') })),
});

export type RequestsQueryInput = Validated<typeof RequestsQuery>;

export const RecordedRequest = Type.Object(
  {
    instance: Type.String({
      pattern: '^urn:psync:request:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
      description: "The request's `instance`: the problem document's, and `urn:psync:request:` + `X-Request-Id` for any answer.",
    }),
    received_at: Type.String({ format: 'date-time', description: 'When the gateway received the request.' }),
    method: Type.String({ description: 'The HTTP method.', examples: ['PUT'] }),
    route: Type.String({ description: 'The route template, as the paths of this document spell it with the `/v1` prefix.', examples: ['/v1/blocks/{external_uid}'] }),
    path_params: Type.Unsafe<Record<string, string>>({
      type: 'object',
      additionalProperties: { type: 'string' },
      description:
        "The route's own path identifiers, decoded; one that failed validation is left out. Anything shaped like a credential (`psk_…`, `pst_…`, `whsec_…`) is kept as `psk_[redacted]` and the like.",
    }),
    status: Type.Integer({ minimum: 100, maximum: 599, description: 'The HTTP status answered.' }),
    code: nullable(Type.String({ description: "The problem document's `code`; `null` for a `2xx`." })),
    errors: Type.Array(Type.Unsafe<Json>({ $ref: '#/components/schemas/Violation' }), {
      description:
        "The `errors[]` of a `validation_failed` answer; empty otherwise. A `field` keeps only this document's field names: from the first name it does not have on, it is `*` (`note` is `*`, `address.floor` is `address.*`).",
    }),
    duration_ms: Type.Integer({ minimum: 0, description: 'How long the gateway took to answer, in milliseconds.' }),
    key_id: nullable(Type.String({ description: "The public id of the API key behind the request's token (never the key)." })),
  },
  { description: 'The metadata of one contract request, as the request log keeps it. Never a body, a query value, a header, a token or a key.' },
);
export type RecordedRequestJson = Static<typeof RecordedRequest>;

export const RecordedRequestList = Type.Object(
  {
    items: Type.Array(componentRef('RecordedRequest', RecordedRequest), { maxItems: PAGE_SIZE_MAX }),
    next_cursor: nullable(Type.String({ description: 'The `after` of the next page; `null` on the last page.' })),
  },
  { description: "One page of the workspace's recorded requests, newest first. There is no total." },
);
export type RecordedRequestListJson = Static<typeof RecordedRequestList>;
