/**
 * From domain events to deliveries: a durable bus consumer turns the calendar's
 * BookingConfirmed, BookingCancelled and UserErased events into delivery rows.
 *
 * Each event is handled once, deduplicated on the kit's processed_events table, in
 * batches: the delivery row (and, for user.erased, the deletion request) commits in
 * the same transaction as the event's processed_events mark, so a redelivered event
 * creates nothing twice and a crash before the commit leaves the event unacknowledged
 * on the bus, to be handled again.
 *
 * A delivery is created only when, at the time the event is handled:
 * - the event's workspace is a sandbox one (spec: "Delivery to production workspaces
 *   is not enabled"; the events carry the environment);
 * - the workspace's endpoint is `active` and subscribed to the kind. Events that
 *   happen while the endpoint is paused (`events: []`), unsubscribed, unverified or
 *   suspended are not delivered later (docs/contract-gaps.md "paused endpoint").
 *
 * Erasure on our side never waits for anything: a user.erased event at once replaces
 * the guest's name with null in every booking.confirmed delivery of the named bookings
 * that still has a body (pending ones, and abandoned ones, which keep theirs for a
 * replay until they are pruned; delivered ones keep no body at all), and in any
 * confirmation of those bookings handled after it.
 */
import { fromBinary } from '@bufbuild/protobuf';
import type { ReceivedEvent } from '../kit/bus';
import type { PendingQuery, Row } from 'postgres';
import type { Sql, Tx } from '../kit/database';
import type { Logger } from '../kit/logger';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { BookingCancelledSchema, BookingConfirmedSchema, UserErasedSchema } from '../../gen/psync/calendar/v1/events_pb';
import { fromBookingCancelled, fromBookingConfirmed, fromUserErased, scrubGuestName, type DeliverySource } from './envelope';
import { isUuid } from './errors';
import { GroupCommit } from '../kit/group-commit';
import { currentTraceHeaders } from '../kit/telemetry';

/**
 * Subjects (below BUS_PREFIX) the calendar publishes these events on through its
 * outbox: the message's full name, as events.proto suggests (services/calendar/event-log.ts).
 */
export const CALENDAR_SUBJECTS = {
  bookingConfirmed: BookingConfirmedSchema.typeName,
  bookingCancelled: BookingCancelledSchema.typeName,
  userErased: UserErasedSchema.typeName,
} as const;

/** The durable consumer's name (and processed_events consumer). */
export const INTAKE_CONSUMER = 'notifications-webhook-deliveries';

interface Decoded {
  source: DeliverySource;
  environment: Environment;
  /** user.erased only. */
  erased?: { bookingReferences: string[]; providerIds: string[] };
  /** The handler's (consumer span's) traceparent, stored with the delivery. */
  traceparent?: string;
}

function decode(event: ReceivedEvent): Decoded | null {
  switch (event.subject) {
    case CALENDAR_SUBJECTS.bookingConfirmed: {
      const m = fromBinary(BookingConfirmedSchema, event.data);
      return { source: fromBookingConfirmed(m), environment: m.environment };
    }
    case CALENDAR_SUBJECTS.bookingCancelled: {
      const m = fromBinary(BookingCancelledSchema, event.data);
      return { source: fromBookingCancelled(m), environment: m.environment };
    }
    case CALENDAR_SUBJECTS.userErased: {
      const m = fromBinary(UserErasedSchema, event.data);
      return {
        source: fromUserErased(m),
        environment: m.environment,
        erased: { bookingReferences: [...m.bookingReferences], providerIds: [...m.providerIds] },
      };
    }
    default:
      return null;
  }
}

/** Most events handled in one transaction. */
const MAX_BATCH = 64;

/**
 * Turns events into deliveries. The bus handler (`handle`) validates an event and
 * queues it; queued events are written in batches (group-commit.ts) — one transaction
 * for everything that arrived while the previous batch was committing — and each
 * handler returns (so the bus acknowledges its event) only once its batch has
 * committed. A failing batch is retried event by event, so one bad event cannot hold
 * up the others: only its own handler fails and the bus redelivers it.
 */
export class DeliveryIntake {
  private readonly batches: GroupCommit<Decoded, void>;

  constructor(
    private readonly deps: {
      sql: Sql;
      log: Logger;
      /** Called after deliveries were committed (wakes the dispatcher). */
      onDeliveryCreated: () => void;
    },
  ) {
    this.batches = new GroupCommit<Decoded, void>({
      maxBatch: MAX_BATCH,
      isolateFailures: true,
      write: async (items) => {
        if ((await this.write(items)) > 0) this.deps.onDeliveryCreated();
        return items.map(() => undefined);
      },
    });
  }

  /** The bus handler: throwing makes the bus redeliver the event. */
  async handle(event: ReceivedEvent): Promise<void> {
    const { log } = this.deps;
    let decoded: Decoded | null;
    try {
      decoded = decode(event);
    } catch (err) {
      // A message that cannot be decoded never will be: log it and let it go.
      log.error({ err, subject: event.subject, event_id: event.id }, 'webhooks: undecodable domain event dropped');
      return;
    }
    if (!decoded) return;
    const src = decoded.source;
    if (!isUuid(src.eventId) || !isUuid(src.workspaceId)) {
      log.error({ subject: event.subject, event_id: src.eventId, workspace_id: src.workspaceId }, 'webhooks: domain event without a valid event or workspace id dropped');
      return;
    }
    if (decoded.environment !== Environment.SANDBOX) {
      log.debug({ event_id: src.eventId, workspace_id: src.workspaceId, event_type: src.kind }, 'webhooks: not a sandbox workspace; delivery is not enabled');
      return;
    }
    // Batches are written outside this event's span: keep its trace for the delivery row.
    decoded.traceparent = currentTraceHeaders().traceparent;
    await this.batches.submit(decoded);
  }

  /**
   * Marks the events processed (skipping those already marked — a redelivery creates
   * nothing twice), scrubs for erasures, inserts the deliveries the endpoints take now,
   * and the deletion requests, atomically. Returns the deliveries created.
   *
   * A batch without user.erased (nearly every one) is one statement — the mark in a
   * data-modifying CTE, the deliveries for the events it marked — so the atomicity
   * costs no round trips (`begin`, `commit` and a second statement would triple them: at
   * an ordinary rate every batch holds one event). A batch with an erasure scrubs and
   * writes deletion requests between the two, in one transaction.
   */
  private async write(items: Decoded[]): Promise<number> {
    const { sql, log } = this.deps;
    const byId = new Map(items.map((d) => [d.source.eventId, d]));
    const logQueued = (rows: { workspace_id: string; event_id: string; event_type: string }[]) => {
      for (const r of rows) log.debug({ event_id: r.event_id, workspace_id: r.workspace_id, event_type: r.event_type }, 'webhook delivery queued');
      return rows.length;
    };
    if (items.every((d) => !d.erased)) {
      const inserted = await sql<{ workspace_id: string; event_id: string; event_type: string }[]>`
        with fresh as (
          insert into notifications.processed_events (consumer, event_id)
          select ${INTAKE_CONSUMER}, unnest(${sql.array([...byId.keys()])}::uuid[])
          on conflict do nothing
          returning event_id
        )
        ${insertDeliveries(sql, items, sql`where x.event_id in (select event_id from fresh)`)}`;
      return logQueued(inserted);
    }
    return await sql.begin<number>(async (tx) => {
      const fresh = await tx<{ event_id: string }[]>`
        insert into notifications.processed_events (consumer, event_id)
        select ${INTAKE_CONSUMER}, unnest(${tx.array([...byId.keys()])}::uuid[])
        on conflict do nothing
        returning event_id`;
      const todo = fresh.map((r) => byId.get(r.event_id)!).filter(Boolean);
      if (todo.length === 0) return 0;
      for (const d of todo) {
        if (d.erased) await scrubGuestNames(tx, d.source.workspaceId, d.erased.bookingReferences);
      }
      const inserted = await tx<{ workspace_id: string; event_id: string; event_type: string }[]>`${insertDeliveries(tx, todo, tx``)}`;
      const erasures = inserted.filter((r) => r.event_type === 'user.erased').map((r) => byId.get(r.event_id)!);
      for (const d of erasures) {
        await tx`
          insert into notifications.deletion_requests (event_id, workspace_id, booking_references, provider_ids, occurred_at)
          values (${d.source.eventId}, ${d.source.workspaceId}, ${tx.array(d.erased!.bookingReferences)}::text[],
                  ${tx.array(d.erased!.providerIds)}::text[], ${d.source.occurredAt})
          on conflict do nothing`;
      }
      return logQueued(inserted);
    });
  }
}

/**
 * The insert of the deliveries of `events` that the workspaces' endpoints take now
 * (`where`: which of them, e.g. only those just marked processed); returns
 * workspace_id, event_id, event_type of each delivery created. The endpoints' status and
 * subscriptions are read under a share lock (a concurrent registration commits before
 * or after, never half-way).
 */
function insertDeliveries(sql: Sql | Tx, events: Decoded[], where: PendingQuery<Row[]>): PendingQuery<Row[]> {
  const srcs = events.map((d) => d.source);
  return sql`
    insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, traceparent)
    select e.workspace_id, x.event_id, x.kind, x.occurred_at, x.booking_reference,
           case when x.scrubbed is not null and exists (
             select 1 from notifications.erased_bookings b
             where b.workspace_id = e.workspace_id and b.booking_reference = x.booking_reference
           ) then x.scrubbed else x.body end,
           'pending', now(), x.traceparent
    from unnest(
      ${sql.array(srcs.map((x) => x.workspaceId))}::uuid[],
      ${sql.array(srcs.map((x) => x.eventId))}::uuid[],
      ${sql.array(srcs.map((x) => x.kind))}::text[],
      ${sql.array(srcs.map((x) => x.occurredAt))}::timestamptz[],
      ${sql.array(srcs.map((x) => x.bookingReference ?? ''))}::text[],
      ${sql.array(srcs.map((x) => x.body))}::text[],
      ${sql.array(srcs.map((x) => (x.kind === 'booking.confirmed' ? scrubGuestName(x.body) : '')))}::text[],
      ${sql.array(events.map((d) => d.traceparent ?? ''))}::text[]
    ) as u(workspace_id, event_id, kind, occurred_at, booking_reference, body, scrubbed, traceparent)
    cross join lateral (
      select u.workspace_id, u.event_id, u.kind, u.occurred_at,
             nullif(u.booking_reference, '') as booking_reference, u.body,
             nullif(u.scrubbed, '') as scrubbed, nullif(u.traceparent, '') as traceparent
    ) x
    join notifications.endpoints e
      on e.workspace_id = x.workspace_id and e.status = 'active' and x.kind = any(e.events)
    ${where}
    for share of e
    on conflict (workspace_id, event_id) do nothing
    returning workspace_id, event_id, event_type`;
}
/**
 * The erased guest's name leaves every booking.confirmed body of those bookings that is
 * still kept: pending deliveries, and abandoned ones (kept for a replay). The bookings
 * are remembered so a confirmation handled later (events are handled concurrently) is
 * stored without the name.
 *
 * The rows are locked (FOR UPDATE) before they are scrubbed. A delivery that a worker
 * abandons concurrently is waited for and then still matches (abandoned, body kept), so
 * it is scrubbed too; one delivered concurrently has no body left to scrub. A delivery
 * abandoned after this commit keeps the body scrubbed here (abandonment does not
 * touch the body).
 */
async function scrubGuestNames(tx: Tx, workspaceId: string, bookingReferences: string[]): Promise<void> {
  if (bookingReferences.length === 0) return;
  await tx`
    insert into notifications.erased_bookings (workspace_id, booking_reference)
    select ${workspaceId}, unnest(${tx.array(bookingReferences)}::text[])
    on conflict do nothing`;
  const rows = await tx<{ id: string; body: string }[]>`
    select id, body from notifications.deliveries
    where workspace_id = ${workspaceId} and event_type = 'booking.confirmed'
      and state in ('pending', 'abandoned') and body is not null
      and booking_reference = any(${tx.array(bookingReferences)}::text[])
    for update`;
  for (const r of rows) {
    await tx`update notifications.deliveries set body = ${scrubGuestName(r.body)} where id = ${r.id}`;
  }
}
