/**
 * Deletion acknowledgements: public JSON of POST
 * /v1/deletion-requests/{event_id}/acknowledge ↔ notifications protobuf (spec
 * "Deletion acknowledgement").
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate, timestampFromMs, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { AcknowledgeDeletionRequestSchema, AcknowledgeDeletionResponse } from '../../gen/psync/notifications/v1/notifications_pb';
import { instantMs } from '../instant-formats';
import type { AcknowledgeInput as AcknowledgeBody } from '../contract/deletion-requests';
import type { DeletionAcknowledgementStateJson as AcknowledgementJson } from '../contract/deletion-requests';

/** Milliseconds of an RFC 3339 date-time that passed the schema (a leap second is :59.999); NaN for anything else. */
export function dateTimeMs(text: string): number {
  return instantMs(text);
}

export function acknowledgeDeletionRequest(workspaceId: string, eventId: string, body: AcknowledgeBody): MessageInitShape<typeof AcknowledgeDeletionRequestSchema> {
  return {
    workspaceId,
    // UUIDs are case-insensitive; the service keeps them lower-case.
    eventId: eventId.toLowerCase(),
    completedAt: body.completed_at === undefined ? undefined : timestampFromMs(dateTimeMs(body.completed_at)),
  };
}

function iso(ts: Timestamp | undefined, what: string): string {
  if (!ts) throw new Error(`AcknowledgeDeletionResponse.${what} is missing`);
  return timestampDate(ts).toISOString();
}

export function presentAcknowledgement(res: AcknowledgeDeletionResponse): AcknowledgementJson {
  return { event_id: res.eventId, acknowledged_at: iso(res.acknowledgedAt, 'acknowledged_at') };
}
