/**
 * Test events (public POST /v1/sandbox/events; docs/partners/sandbox.md, and the
 * decision in docs/decisions.md): a signed delivery of a synthetic `booking.confirmed`,
 * `booking.cancelled` or `user.erased` about one of the workspace's own listings, sent
 * through the normal pipeline — a delivery row like any other, claimed, signed,
 * retried, abandoned, logged and resendable by the dispatcher — so a partner sees
 * exactly what a real event produces at its endpoint.
 *
 * Synthetic, not a real sandbox booking: nothing happens in the calendar. No night is
 * taken (a partner's later blocks never collide with a test), no hold, booking or
 * erasure exists, nothing reaches the event bus or the marketplace's WatchEvents.
 * What marks it, inside the signed body so it cannot be added or stripped in transit:
 *
 * - the envelope's `"test": true` (absent from every real delivery);
 * - a booking reference `TEST-BK` + 10 base32 characters, a shape no real booking has
 *   (real ones are `BK` + 10): a receiver can never mistake a test for a real
 *   reservation, and a test can name only test bookings (`booking_reference`, to
 *   cancel or erase the booking an earlier test confirmed).
 *
 * The data fields are built by the same functions as real events' (envelope.ts), from
 * the listing as the catalog has it (provider_id, check-in and check-out times) and
 * documented fixed values: guest "Test Guest", party of 2, 100.00 EUR a night, and a
 * stay 30 days from today (UTC) for two nights unless dates are given (services/domain/test-stay.ts).
 *
 * It is queued only when the endpoint is active and subscribed to the kind (as real
 * events are); otherwise nothing is queued and the caller is told
 * (WEBHOOK_ENDPOINT_NOT_ACTIVE), where a real event would be silently not delivered. A
 * test `user.erased` opens a deletion request (flagged test) that the partner
 * acknowledges as a real one; it never escalates to operators.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { BookingSchema, GetErasureResponseSchema } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService, ListingSchema, type Listing } from '../../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import type { Sql } from '../kit/db';
import { failure, notFound, validationFailed, type Violation } from '../kit/rpc';
import type { Logger } from '../kit/base';
import { type DeliveryLogEntry, type DeliveryRow } from './delivery-log';
import { cancelledDelivery, confirmedDelivery, envelopeBody, erasedDelivery, subscribableKind, type DeliverySource, type Envelope, type EventKind } from './envelope';
import { endpointNotActive } from './errors';
import { resolveTestStay, type TestStay } from '../domain';
import { canonicalUuid } from '../kit/base';

/**
 * A test booking reference is `TEST-BK` + 10 of these, never the shape of a real one
 * (`BK` + 10, calendar/bookings.ts); TriggerTestEventRequest's .proto rule and the
 * public schema reads it from there (gateway/contract/sandbox.ts).
 * Crockford base32, as real references use.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A fresh test booking reference. */
export function newTestBookingReference(): string {
  let out = 'TEST-BK';
  for (const b of randomBytes(10)) out += ALPHABET[b & 31];
  return out;
}

/** The fixed values of a test booking (docs/partners/sandbox.md); its stay: services/domain/test-stay.ts. */
export const TEST_BOOKING = {
  guestName: 'Test Guest',
  partySize: 2,
  nightlyAmount: 100,
  currency: 'EUR',
} as const;

/** What to send. */
export interface TestEventInput {
  workspaceId: string;
  listingId: string;
  eventType: WebhookEventType;
  bookingReference?: string;
  checkIn?: string;
  checkOut?: string;
  initiatedBy?: CancellationInitiator;
}

/**
 * What the .proto's field rules cannot say (they hold before the handler runs: a
 * subscribable kind, the listing id's length, the reference's pattern, real dates, a
 * declared initiator): which fields belong to the kind, as the gateway checks the
 * public body, and the stay's order and length; the stay's dates resolved.
 */
function checked(input: TestEventInput, now: Date): { kind: EventKind; stay: TestStay } {
  const violations: Violation[] = [];
  const kind = subscribableKind(input.eventType)!;
  // Dates belong to booking.confirmed, the initiator to booking.cancelled.
  if (kind !== 'booking.confirmed') {
    if (input.checkIn !== undefined) violations.push({ field: 'check_in', code: 'invalid' });
    if (input.checkOut !== undefined) violations.push({ field: 'check_out', code: 'invalid' });
  }
  if (kind !== 'booking.cancelled' && input.initiatedBy !== undefined) violations.push({ field: 'initiated_by', code: 'invalid' });
  const stay = resolveTestStay(input.checkIn, input.checkOut, now);
  if (Array.isArray(stay)) violations.push(...stay.filter((v) => !violations.some((w) => w.field === v.field)));
  if (violations.length > 0 || Array.isArray(stay)) throw validationFailed(violations);
  return { kind, stay };
}

/** The listing, if it is the workspace's: unknown and foreign are one NOT_FOUND (PROPERTY_NOT_FOUND). */
async function ownListing(catalog: Client<typeof CatalogService>, workspaceId: string, listingId: string): Promise<Listing> {
  let listing: Listing | undefined;
  try {
    listing = (await catalog.getListing({ workspaceId, listingId })).listing;
  } catch (err) {
    // Anything but NOT_FOUND travels as the catalog (or its transport) said it.
    if (ConnectError.from(err).code !== Code.NotFound) throw err;
  }
  if (!listing || listing.workspaceId.toLowerCase() !== workspaceId) {
    throw notFound(ErrorReason.PROPERTY_NOT_FOUND, 'no such listing in this workspace');
  }
  // The gateway lets only sandbox workspaces through; this holds for any other caller.
  if (listing.environment !== Environment.SANDBOX) {
    throw failure(Code.Unimplemented, ErrorReason.NOT_ENABLED, 'test events are for sandbox workspaces only');
  }
  return listing;
}

/** The delivery to queue: built by the real events' builders, then marked as a test. */
function testSource(
  kind: EventKind,
  listing: Listing,
  stay: TestStay,
  input: TestEventInput,
  now: Date,
): { source: DeliverySource; erased?: { bookingReferences: string[]; providerIds: string[] } } {
  const eventId = randomUUID();
  const at = timestampFromDate(now);
  const bookingReference = input.bookingReference ?? newTestBookingReference();
  const workspaceId = listing.workspaceId.toLowerCase();
  let source: DeliverySource;
  let erased: { bookingReferences: string[]; providerIds: string[] } | undefined;
  if (kind === 'booking.confirmed') {
    source = confirmedDelivery(
      eventId,
      create(BookingSchema, {
        bookingReference,
        workspaceId,
        listingId: listing.listingId,
        providerId: listing.providerId,
        checkIn: stay.checkIn,
        checkOut: stay.checkOut,
        checkInTime: listing.checkInTime,
        checkOutTime: listing.checkOutTime,
        partySize: TEST_BOOKING.partySize,
        guestName: TEST_BOOKING.guestName,
        amountPaid: { value: `${stay.nights * TEST_BOOKING.nightlyAmount}.00`, currency: TEST_BOOKING.currency },
        confirmedAt: at,
      }),
    );
  } else if (kind === 'booking.cancelled') {
    source = cancelledDelivery(
      eventId,
      create(BookingSchema, {
        bookingReference,
        workspaceId,
        listingId: listing.listingId,
        providerId: listing.providerId,
        cancelledAt: at,
        initiatedBy: input.initiatedBy || CancellationInitiator.GUEST,
      }),
    );
  } else {
    erased = { bookingReferences: [bookingReference], providerIds: listing.providerId === undefined ? [] : [listing.providerId] };
    source = erasedDelivery(eventId, workspaceId, create(GetErasureResponseSchema, { erasedAt: at, ...erased }));
  }
  const envelope = JSON.parse(source.body) as Envelope;
  return { source: { ...source, body: envelopeBody({ ...envelope, test: true }) }, erased };
}

/**
 * A test `booking.confirmed` body for no listing of the workspace (`TEST-LISTING`, the
 * default stay): what receiver checks send (endpoint-checks.ts). Built like every test
 * event, by the real events' builders, then marked.
 */
export function testConfirmationBody(workspaceId: string, now: Date = new Date()): string {
  const listing = create(ListingSchema, { workspaceId, listingId: 'TEST-LISTING', checkInTime: '15:00', checkOutTime: '11:00' });
  const stay = resolveTestStay(undefined, undefined, now) as TestStay;
  return testSource('booking.confirmed', listing, stay, { workspaceId, listingId: listing.listingId, eventType: WebhookEventType.BOOKING_CONFIRMED }, now).source.body;
}

export interface TestEventDeps {
  sql: Sql;
  log: Logger;
  catalog: () => Client<typeof CatalogService>;
  /** Called once the delivery is committed (wakes the dispatcher). */
  queued: () => void;
}

/** Queues a test delivery; resolves with it (pending, no attempt yet). */
export async function triggerTestEvent(deps: TestEventDeps, input: TestEventInput, now = new Date()): Promise<DeliveryLogEntry> {
  const ws = canonicalUuid(input.workspaceId);
  const { kind, stay } = checked(input, now);
  const listing = await ownListing(deps.catalog(), ws, input.listingId);
  const { source, erased } = testSource(kind, listing, stay, input, now);
  const row = await deps.sql.begin(async (tx) => {
    // As intake.ts: only an active endpoint subscribed to the kind takes it, read under a share lock.
    const [d] = await tx<DeliveryRow[]>`
      insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, test)
      select e.workspace_id, ${source.eventId}::uuid, ${source.kind}::text, ${source.occurredAt}::timestamptz,
             ${source.bookingReference ?? null}::text, ${source.body}::text, 'pending', now(), true
      from notifications.endpoints e
      where e.workspace_id = ${ws} and e.status = 'active' and ${source.kind}::text = any(e.events)
      for share of e
      returning id, workspace_id, event_id, event_type, state, attempts, last_status, last_error,
                next_attempt_at, occurred_at, created_at, test`;
    if (!d) throw endpointNotActive();
    if (erased) {
      await tx`
        insert into notifications.deletion_requests (event_id, workspace_id, booking_references, provider_ids, occurred_at, test)
        values (${source.eventId}, ${ws}, ${tx.array(erased.bookingReferences)}::text[], ${tx.array(erased.providerIds)}::text[],
                ${source.occurredAt}, true)`;
    }
    return d;
  });
  deps.queued();
  deps.log.info({ workspace_id: ws, event_id: source.eventId, event_type: source.kind, listing_id: listing.listingId }, 'webhook test event queued for the partner');
  // The delivery as queued: no attempt yet. Not read back, since the dispatcher may
  // already be attempting it (queued() nudged it).
  return { ...row, attempt_log: [], attempt_log_total: 0 };
}
