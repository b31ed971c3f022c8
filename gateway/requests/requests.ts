/** What GET /v1/requests accepts (routes/requests.ts). */
import { Type } from '@sinclair/typebox';
import { ListRequestsRequestSchema } from '../../gen/psync/identity/v1/identity_pb';
import { patternOf, rangeOf } from '../proto-rules';
import { closed, type Validated } from '../request-schema';
import { Limit } from './paging';

/** GET /v1/requests: filters by HTTP status and problem code, a limit, and the previous page's cursor. */
export const RequestsQuery = closed({
  status: Type.Optional(Type.Integer(rangeOf(ListRequestsRequestSchema, 'status'))),
  code: Type.Optional(Type.String({ pattern: '^[a-z][a-z_]{0,63}$' })),
  limit: Limit,
  after: Type.Optional(Type.String({ pattern: patternOf(ListRequestsRequestSchema, 'after') })),
});

export type RequestsQueryInput = Validated<typeof RequestsQuery>;
