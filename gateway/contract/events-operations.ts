/** The operations of the Events tag of the OpenAPI document (openapi.ts), with their examples (events-examples.ts). */
import { type TagOperations, answer, curl, otherMethods, parameterRef, problem, problems, withExamples } from './operation';
import { EVENT_FEED_RETENTION_DAYS } from '../../services/kit/base';
import { VALIDATION_FAILED_REQUEST } from './components-responses';
import { listEventsExamples } from './events-examples';

export const EVENTS_OPERATIONS: TagOperations = {
  paths: {
    '/events': {
      'x-other-methods': otherMethods('GET, HEAD'),
      get: withExamples(
        {
          operationId: 'listEvents',
          summary: "List the workspace's events (reconciliation)",
          description: [
            "Every `booking.confirmed`, `booking.cancelled` and `user.erased` event of the workspace, oldest first, in the order the marketplace recorded them — whether or not it was delivered: while the endpoint was paused, pending verification, suspended, after its deliveries were abandoned, or before any endpoint was registered. Each item is exactly the envelope a delivery carries (same `event_id`, `occurred_at` and `data`, the guest's name `null` once the guest was erased); test events are not listed.",
            '',
            `Read it to recover missed events: keep the last page's \`next_after\` and pass it as \`after\` next time; deduplicate on \`event_id\` against what your receiver already handled. Events are kept ${EVENT_FEED_RETENTION_DAYS} days (at least 30): \`after_expired: true\` says events after your \`after\` were pruned before you read them.`,
          ].join('\n'),
          tags: ['Events'],
          parameters: [parameterRef('events_after'), parameterRef('events_limit')],
          'x-codeSamples': curl('GET', '/events?after=41&limit=50'),
          responses: { '200': answer('One page of events.', 'EventList'), ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST) }) },
        },
        listEventsExamples,
      ),
    },
  },
};
