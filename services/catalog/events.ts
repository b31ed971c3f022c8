/**
 * The catalog's domain events (proto/psync/catalog/v1/events.proto), written to the
 * outbox in the transaction of the change that causes them (services/kit/events/outbox-writer.ts).
 *
 * Subjects below the bus prefix (NATS: `psync.catalog.listing.*`):
 * - `catalog.listing.published`: a listing id was assigned — a partner property became
 *   publishable for the first time, or a marketplace listing was created;
 * - `catalog.listing.updated`: a listing that has an id changed (content, photos,
 *   status) or became showable again;
 * - `catalog.listing.unpublished`: a listing that was showable no longer is
 *   (unpublishable or unlisted); its id is kept.
 * Every event carries the whole `Listing` after the change (workspace, environment,
 * provider_id, name, check-in/out times, publishable, status). Header `psync-type`
 * names the message.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { timestampNow } from '@bufbuild/protobuf/wkt';
import { randomUUID } from 'node:crypto';
import { ListingPublishedSchema, ListingUnpublishedSchema, ListingUpdatedSchema } from '../../gen/psync/catalog/v1/events_pb';
import type { Tx } from '../kit/db';
import { appendToOutbox } from '../kit/events';
import { toMissingReason } from './messages';
import type { ListingRecord } from './listing-records';
import { listingMessage } from './listing-records';
import type { MissingReason } from './publishability';

/** Subjects of the catalog's events (below BUS_PREFIX). */
export const LISTING_SUBJECTS = {
  published: 'catalog.listing.published',
  updated: 'catalog.listing.updated',
  unpublished: 'catalog.listing.unpublished',
} as const;

export type ListingEventKind = keyof typeof LISTING_SUBJECTS;

/** Appends one listing event to the catalog outbox inside `tx`; returns the event id. */
export async function appendListingEvent(tx: Tx, kind: ListingEventKind, listing: ListingRecord, missing: MissingReason[] = []): Promise<string> {
  const eventId = randomUUID();
  const common = { eventId, occurredAt: timestampNow(), workspaceId: listing.workspace_id, listing: listingMessage(listing) };
  let data: Uint8Array;
  let type: string;
  if (kind === 'published') {
    data = toBinary(ListingPublishedSchema, create(ListingPublishedSchema, common));
    type = ListingPublishedSchema.typeName;
  } else if (kind === 'updated') {
    data = toBinary(ListingUpdatedSchema, create(ListingUpdatedSchema, common));
    type = ListingUpdatedSchema.typeName;
  } else {
    data = toBinary(ListingUnpublishedSchema, create(ListingUnpublishedSchema, { ...common, missing: missing.map(toMissingReason) }));
    type = ListingUnpublishedSchema.typeName;
  }
  return appendToOutbox(tx, 'catalog', { id: eventId, subject: LISTING_SUBJECTS[kind], data, headers: { 'psync-type': type } });
}
