/** The operations of the Deletion requests tag of the OpenAPI document (openapi.ts), with their examples (deletion-requests-examples.ts). */
import { type TagOperations, answer, curl, otherMethods, parameterRef, problem, problems, schemaRef, withExamples } from './operation';
import { COMPLETED_AT_SKEW_MINUTES } from './document-values';
import { VALIDATION_FAILED_REQUEST } from './components-responses';
import { acknowledgeDeletionRequestExamples } from './deletion-requests-examples';

export const DELETION_REQUESTS_OPERATIONS: TagOperations = {
  paths: {
    '/deletion-requests/{event_id}/acknowledge': {
      'x-other-methods': otherMethods('POST'),
      parameters: [parameterRef('event_id')],
      post: withExamples(
        {
          operationId: 'acknowledgeDeletionRequest',
          summary: 'Acknowledge a carried-out erasure',
          description: `Call it only once the records named by the \`user.erased\` delivery are deleted. An empty body is \`{}\`. \`completed_at\` cannot be in the future (beyond ${COMPLETED_AT_SKEW_MINUTES} minutes of clock skew: violation \`maximum\`). Acknowledging twice answers \`200\` again with the first \`acknowledged_at\`. Sandbox only.`,
          tags: ['Deletion requests'],
          'x-codeSamples': curl('POST', '/deletion-requests/0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f/acknowledge'),
          requestBody: {
            required: false,
            description: 'Optional `completed_at` (defaults to the time of receipt); the body may be empty.',
            content: { 'application/json': { schema: schemaRef('DeletionAcknowledgement') } },
          },
          responses: {
            '200': answer('Acknowledged.', 'DeletionAcknowledgementState'),
            ...problems({ '400': problem('validation_failed', VALIDATION_FAILED_REQUEST), '404': 'deletion_request_not_found' }),
          },
        },
        acknowledgeDeletionRequestExamples,
      ),
    },
  },
};
