/** The operations of the Request log tag of the OpenAPI document (openapi.ts), with their examples (requests-examples.ts). */
import { type TagOperations, answer, curl, otherMethods, problem, problems, withExamples } from './operation';
import { RequestsQuery } from './requests';
import { PAGE_SIZE_DEFAULT } from '../../services/kit/base';
import { VALIDATION_FAILED_REQUEST } from './components-responses';
import { listRequestsExamples } from './requests-examples';

export const REQUESTS_OPERATIONS: TagOperations = {
  paths: {
    '/requests': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'listRequests',
          summary: "List the workspace's recorded requests",
          description: [
            "The request log: the metadata of the workspace's contract requests, newest first, so a request can be found by the `instance` of its problem document (or the `X-Request-Id` of any answer) and quoted to support. Every request the gateway authenticated for this workspace is recorded, whatever its answer (`2xx` too, and this endpoint's own calls); a `401` has no workspace and is not recorded.",
            '',
            "Recorded: time, method, route template (`/v1/blocks/{external_uid}`), the route's own path identifiers, status, problem `code`, the `errors[]` field/code pairs, `instance`, duration and the key id. Never a body, a query value, a header, a token, a key or an address.",
            '',
            'Recording happens shortly after the answer (about a second): a request may show up a moment later, and in rare overload it may be missing. Kept for 14 days, at most the newest 10,000 per workspace.',
            '',
            "Paged by cursor: `next_cursor` is the `after` of the next page, `null` on the last one. Sandbox workspaces only; production workspaces get `501` after validation, as everywhere; operators can look up any workspace's requests (`psync request show`).",
          ].join('\n'),
          tags: ['Request log'],
          parameters: [
            { name: 'status', in: 'query', required: false, description: 'Only requests answered with this HTTP status.', schema: RequestsQuery.properties.status, example: 400 },
            {
              name: 'code',
              in: 'query',
              required: false,
              description: 'Only requests answered with this problem `code` (any string of its shape is accepted; one no answer has matches nothing).',
              schema: RequestsQuery.properties.code,
              example: 'validation_failed',
            },
            { name: 'limit', in: 'query', required: false, description: 'Rows per page.', schema: RequestsQuery.properties.limit, example: PAGE_SIZE_DEFAULT },
            {
              name: 'after',
              in: 'query',
              required: false,
              description: 'The `next_cursor` of the previous page (opaque).',
              schema: RequestsQuery.properties.after,
              example: 'A4REDMxzX_______________________',
            },
          ],
          'x-codeSamples': curl('GET', '/requests?code=validation_failed&limit=50'),
          responses: { '200': answer('One page of recorded requests.', 'RecordedRequestList'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        listRequestsExamples,
      ),
    },
  },
};
