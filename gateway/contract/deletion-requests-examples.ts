/**
 * The Example Objects of the Deletion requests operations (deletion-requests-operations.ts). A request example and the response example of the same name
 * belong together; a problem example gives its request and violations, and its document is rendered for its response's code (operation.ts).
 */
import type { OperationExamples } from './operation';

/** POST /deletion-requests/{event_id}/acknowledge */
export const acknowledgeDeletionRequestExamples: OperationExamples = {
  request: {
    completed_at: { summary: 'Deleted at a stated time', value: { completed_at: '2026-09-14T09:30:00Z' } },
    now: { summary: 'Deleted now (the same as an empty body)', value: {} },
  },
  responses: {
    '200': {
      completed_at: { summary: 'Acknowledged', value: { event_id: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', acknowledged_at: '2026-09-14T09:31:12.418Z' } },
      now: {
        summary: 'Acknowledged again: the first acknowledgement is returned',
        value: { event_id: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f', acknowledged_at: '2026-09-14T09:31:12.418Z' },
      },
    },
    '400': {
      invalid: {
        summary: 'An `event_id` that is not a UUID and a `completed_at` that is not a date-time',
        'x-request': { path: { event_id: 'erasure-17' }, body: { completed_at: 'yesterday' } },
        errors: [
          { field: 'event_id', code: 'format' },
          { field: 'completed_at', code: 'format' },
        ],
      },
    },
  },
};
