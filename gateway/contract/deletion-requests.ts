/** What the deletion-request routes accept (routes/deletion-requests.ts). */
import { Type, type Static } from '@sinclair/typebox';
import { closed, requestBody, type Validated } from '../contract-schema';

/**
 * How far ahead of the gateway's clock `completed_at` may be (clock skew); the
 * notifications service applies the same bound (COMPLETED_AT_MAX_AHEAD_MS; a test pins
 * both). Deletion cannot have been completed after it is acknowledged.
 */
export const COMPLETED_AT_MAX_AHEAD_MS = 5 * 60_000;

/** The body of POST /v1/deletion-requests/{event_id}/acknowledge. */
export const AcknowledgeBody = requestBody(
  'acknowledge',
  'Deletion acknowledgement',
  'Body of POST /v1/deletion-requests/{event_id}/acknowledge; an empty body is {}. completed_at defaults to the time of receipt.',
  { completed_at: Type.Optional(Type.String({ format: 'date-time' })) },
);

/** The path of a deletion request: the `event_id` of its user.erased event. */
export const DeletionRequestPath = closed({ event_id: Type.String({ format: 'uuid' }) });

export type AcknowledgeInput = Validated<typeof AcknowledgeBody>;

export const DeletionAcknowledgementState = Type.Object({
  event_id: DeletionRequestPath.properties.event_id,
  acknowledged_at: Type.String({ format: 'date-time', description: 'When the acknowledgement was first recorded (a second call returns the first).' }),
});
export type DeletionAcknowledgementStateJson = Static<typeof DeletionAcknowledgementState>;
