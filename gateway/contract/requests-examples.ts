/**
 * The Example Objects of the Request log operations (requests-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** GET /requests */
export const listRequestsExamples: OperationExamples = {
  responses: {
    '200': {
      page: {
        summary: 'The `validation_failed` answers',
        'x-request': { query: { code: 'validation_failed' } },
        value: {
          items: [
            {
              instance: 'urn:psync:request:3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40',
              received_at: '2026-09-13T21:14:09.532Z',
              method: 'PUT',
              route: '/v1/blocks/{external_uid}',
              path_params: { external_uid: 'resv-100234' },
              status: 400,
              code: 'validation_failed',
              errors: [
                { field: 'check_out', code: 'format' },
                { field: 'reason', code: 'enum' },
              ],
              duration_ms: 4,
              key_id: 'k7xq2mbr5tnc3vhd',
            },
          ],
          next_cursor: null,
        },
      },
      first_page: {
        summary: 'A first page with more to come',
        'x-request': { query: { limit: '1' } },
        value: {
          items: [
            {
              instance: 'urn:psync:request:7d2a4c1e-0b9f-4e3a-8c6d-5f1e2a3b4c5d',
              received_at: '2026-09-13T21:15:02.118Z',
              method: 'GET',
              route: '/v1/blocks',
              path_params: {},
              status: 200,
              code: null,
              errors: [],
              duration_ms: 12,
              key_id: 'k7xq2mbr5tnc3vhd',
            },
          ],
          next_cursor: 'AAYF3Yq5pN59LSpMHguePgOoxl8eKjtM',
        },
      },
    },
    '400': {
      invalid: {
        summary: 'A status that is no HTTP status, a limit over 200, a cursor that is not one and a parameter the endpoint does not have',
        'x-request': { query: { status: '42', limit: '500', after: 'page-2', page: '2' } },
        errors: [
          { field: 'page', code: 'unknown_field' },
          { field: 'status', code: 'minimum' },
          { field: 'limit', code: 'maximum' },
          { field: 'after', code: 'pattern' },
        ],
      },
    },
  },
};
