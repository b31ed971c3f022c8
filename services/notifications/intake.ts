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
 * Every proven event of a sandbox workspace is recorded in the workspace's events feed
 * (event-feed.ts) in the same statement, delivered or not. A delivery is created only
 * when, at the time the event is handled:
 * - the calendar proves the event (event-proof.ts): anything else is dropped and
 *   counted; the guest's name in a booking.confirmed comes from that read-back, as no
 *   event carries it;
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
import { timestampMs } from '@bufbuild/protobuf/wkt';
import { markProcessed, type ReceivedEvent } from '../kit/events';
import type { PendingQuery, Row } from 'postgres';
import type { Sql, Tx } from '../kit/db';
import { logEvent, type Logger } from '../kit/base';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import {
  BookingCancelledSchema,
  BookingConfirmedSchema,
  UserErasedSchema,
  type BookingCancelled,
  type BookingConfirmed,
  type UserErased,
} from '../../gen/psync/calendar/v1/events_pb';
import { cancelledDelivery, confirmedDelivery, erasedDelivery, scrubGuestName, type DeliverySource } from './envelope';
import { scrubGuestNames } from './guest-name-scrub';
import { isUuid } from './errors';
import { proveBookingCancelled, proveBookingConfirmed, proveUserErased, type EventOwner, type Proof, type RefusalReason } from './event-proof';
import { recordBusEventRefused } from '../kit/telemetry';
import { GroupCommit } from '../kit/base';
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
  /**
   * What the partner is told, once per workspace: the booking reference of a
   * confirmation or cancellation, the erasure id of an erasure (`event_facts.subject`).
   */
  subject: string;
  /** booking.cancelled only: when the calendar confirmed the booking (ms since the epoch). */
  confirmedAtMs?: number;
  /** user.erased only. */
  erased?: { bookingReferences: string[]; providerIds: string[] };
  /** The handler's (consumer span's) traceparent, stored with the delivery. */
  traceparent?: string;
}

/** An event as it arrived, decoded but not yet proven. */
type Received = { kind: 'booking.confirmed'; message: BookingConfirmed } | { kind: 'booking.cancelled'; message: BookingCancelled } | { kind: 'user.erased'; message: UserErased };

/** The public kind of each subject. */
const KIND_OF_SUBJECT: ReadonlyMap<string, Received['kind']> = new Map([
  [CALENDAR_SUBJECTS.bookingConfirmed, 'booking.confirmed'],
  [CALENDAR_SUBJECTS.bookingCancelled, 'booking.cancelled'],
  [CALENDAR_SUBJECTS.userErased, 'user.erased'],
]);

function decode(kind: Received['kind'], data: Uint8Array): Received {
  switch (kind) {
    case 'booking.confirmed':
      return { kind, message: fromBinary(BookingConfirmedSchema, data) };
    case 'booking.cancelled':
      return { kind, message: fromBinary(BookingCancelledSchema, data) };
    case 'user.erased':
      return { kind, message: fromBinary(UserErasedSchema, data) };
  }
}

/**
 * The delivery of a received event once its owner proved it (event-proof.ts), built
 * from the owner's record (every field, the guest's name included, which only the
 * owner has); or the reason it was refused.
 */
async function proven(owner: EventOwner, r: Received): Promise<Proof<Decoded>> {
  const eventId = r.message.eventId;
  switch (r.kind) {
    case 'booking.confirmed': {
      const p = await proveBookingConfirmed(owner, r.message);
      if (!p.ok) return p;
      return { ok: true, value: { source: confirmedDelivery(eventId, p.value), subject: p.value.bookingReference } };
    }
    case 'booking.cancelled': {
      const p = await proveBookingCancelled(owner, r.message);
      if (!p.ok) return p;
      const confirmedAtMs = p.value.confirmedAt ? timestampMs(p.value.confirmedAt) : undefined;
      return { ok: true, value: { source: cancelledDelivery(eventId, p.value), subject: p.value.bookingReference, confirmedAtMs } };
    }
    case 'user.erased': {
      const p = await proveUserErased(owner, r.message);
      if (!p.ok) return p;
      const erased = { bookingReferences: [...p.value.bookingReferences], providerIds: [...p.value.providerIds] };
      return { ok: true, value: { source: erasedDelivery(eventId, r.message.workspaceId, p.value), subject: r.message.erasureId.toLowerCase(), erased } };
    }
  }
}

/**
 * How many times an event whose booking the calendar answered without its times
 * (`unprovable`: a calendar of the previous release during an upgrade) is handed back
 * to the bus before it is refused; with the bus's back-off that is several minutes.
 */
const UNPROVABLE_ATTEMPTS = 12;

/**
 * A cancellation whose booking's confirmation is not recorded yet waits for it — handed
 * back to the bus (its back-off: about 45 s over these attempts) — while the booking
 * was confirmed less than ORDER_WINDOW_MS ago: the intake's pullers run concurrently
 * and a redelivered event comes late, so a confirmation can arrive after its
 * cancellation, and it would then be refused (`after_cancellation`). An older booking's
 * confirmation was handled long ago (or refused), so its cancellation never waits.
 */
const ORDER_ATTEMPTS = 10;
const ORDER_WINDOW_MS = 10 * 60_000;

/** What became of a proven event in its batch: delivered where an endpoint takes it (or recorded only), or refused. */
type Outcome = 'recorded' | 'already_processed' | Extract<RefusalReason, 'replayed' | 'after_cancellation'>;

/** Most events handled in one transaction. */
const MAX_BATCH = 64;

/** A row the batch statement answers: one per event it marked processed. */
interface OutcomeRow {
  event_id: string;
  outcome: Exclude<Outcome, 'already_processed'> | 'delivered';
  workspace_id: string;
  event_type: string;
}

/**
 * Turns events into deliveries. The bus handler (`handle`) validates an event and
 * queues it; queued events are written in batches (group-commit.ts) — one transaction
 * for everything that arrived while the previous batch was committing — and each
 * handler returns (so the bus acknowledges its event) only once its batch has
 * committed. A failing batch is retried event by event, so one bad event cannot hold
 * up the others: only its own handler fails and the bus redelivers it.
 */
export class DeliveryIntake {
  private readonly batches: GroupCommit<Decoded, Outcome>;

  constructor(
    private readonly deps: {
      sql: Sql;
      log: Logger;
      /** The owner of the events (the calendar), asked to prove each one. */
      owner: EventOwner;
      /** Called after deliveries were committed (wakes the dispatcher). */
      onDeliveryCreated: () => void;
    },
  ) {
    this.batches = new GroupCommit<Decoded, Outcome>({
      maxBatch: MAX_BATCH,
      isolateFailures: true,
      write: async (items) => {
        const outcomes = await this.write(items);
        if ([...outcomes.values()].includes('delivered')) this.deps.onDeliveryCreated();
        return items.map((d) => {
          const o = outcomes.get(d.source.eventId) ?? 'already_processed';
          return o === 'delivered' ? 'recorded' : o;
        });
      },
    });
  }

  /**
   * The bus handler: throwing makes the bus redeliver the event. An event that is not
   * for a sandbox workspace leads to no delivery and is let go; one its owner does not
   * prove, or whose fact the partner was told already, is refused: let go too, counted
   * and logged (ids only, no event content).
   */
  async handle(event: ReceivedEvent): Promise<void> {
    const kind = KIND_OF_SUBJECT.get(event.subject);
    if (!kind) return;
    let received: Received;
    try {
      received = decode(kind, event.data);
    } catch {
      // A message that cannot be decoded never will be.
      return this.refuse(kind, 'undecodable', { event_id: event.id });
    }
    const m = received.message;
    if (!isUuid(m.eventId) || !isUuid(m.workspaceId)) return this.refuse(kind, 'malformed', { event_id: event.id });
    if (m.environment !== Environment.SANDBOX) {
      this.deps.log.debug({ event_id: m.eventId, workspace_id: m.workspaceId, event_type: kind }, 'webhooks: not a sandbox workspace; delivery is not enabled');
      return;
    }
    const ids = { event_id: m.eventId, workspace_id: m.workspaceId };
    const p = await proven(this.deps.owner, received);
    if (!p.ok) {
      // An older calendar answers bookings without their times: ask again later, a few times.
      if (p.reason === 'unprovable' && event.deliveryCount < UNPROVABLE_ATTEMPTS)
        throw new Error('webhooks: the calendar answered the booking without its check-in/out times; retried');
      return this.refuse(kind, p.reason, ids);
    }
    if (await this.awaitsConfirmation(p.value, event.deliveryCount)) {
      throw new Error("webhooks: the booking's confirmation is not recorded yet; its cancellation waits for it");
    }
    // Batches are written outside this event's span: keep its trace for the delivery row.
    p.value.traceparent = currentTraceHeaders().traceparent;
    const outcome = await this.batches.submit(p.value);
    if (outcome === 'replayed' || outcome === 'after_cancellation') this.refuse(kind, outcome, ids);
  }

  /** Whether the cancellation `d` should wait for its booking's confirmation (ORDER_ATTEMPTS). */
  private async awaitsConfirmation(d: Decoded, deliveryCount: number): Promise<boolean> {
    if (d.source.kind !== 'booking.cancelled' || d.confirmedAtMs === undefined) return false;
    if (deliveryCount >= ORDER_ATTEMPTS || Date.now() - d.confirmedAtMs > ORDER_WINDOW_MS) return false;
    const [told] = await this.deps.sql`
      select 1 from notifications.event_facts
      where workspace_id = ${d.source.workspaceId} and event_type = 'booking.confirmed' and subject = ${d.subject}`;
    return told === undefined;
  }

  /** Drops a refused event: counted (psync_bus_events_refused_total) and logged by ids only. */
  private refuse(kind: Received['kind'], reason: RefusalReason, ids: { event_id: string; workspace_id?: string }): void {
    recordBusEventRefused(kind, reason);
    this.deps.log.warn(
      { event: logEvent('webhook.domain_event.refused'), ...ids, event_type: kind, reason },
      'webhooks: domain event refused: not what its owner holds, or told already; dropped',
    );
  }

  /**
   * Marks the events processed (skipping those already marked — a redelivery creates
   * nothing twice), records each one's fact (refusing a fact told already, and a
   * confirmation after its booking's cancellation), scrubs for erasures, inserts the
   * deliveries the endpoints take now, and the deletion requests, atomically. Returns
   * each marked event's outcome by event id; an event absent from it was processed before.
   *
   * A batch without user.erased (nearly every one) is one statement — the mark in a
   * data-modifying CTE, the deliveries for the events it marked — so the atomicity
   * costs no round trips (`begin`, `commit` and a second statement would triple them: at
   * an ordinary rate every batch holds one event). A batch with an erasure scrubs and
   * writes deletion requests between the two, in one transaction.
   */
  private async write(batch: Decoded[]): Promise<Map<string, OutcomeRow['outcome']>> {
    const { sql, log } = this.deps;
    const outcomes = new Map<string, OutcomeRow['outcome']>();
    // A confirmation after its booking's cancellation in the same batch: the statement
    // below sees only facts committed before it.
    const cancelled = new Set<string>();
    const items: Decoded[] = [];
    for (const d of batch) {
      const key = `${d.source.workspaceId}/${d.subject}`;
      if (d.source.kind === 'booking.cancelled') cancelled.add(key);
      if (d.source.kind === 'booking.confirmed' && cancelled.has(key)) outcomes.set(d.source.eventId, 'after_cancellation');
      else items.push(d);
    }
    if (items.length === 0) return outcomes;
    const byId = new Map(items.map((d) => [d.source.eventId, d]));
    const collect = (rows: OutcomeRow[]) => {
      for (const r of rows) {
        outcomes.set(r.event_id, r.outcome);
        if (r.outcome === 'delivered') log.debug({ event_id: r.event_id, workspace_id: r.workspace_id, event_type: r.event_type }, 'webhook delivery queued');
      }
      return outcomes;
    };
    if (items.every((d) => !d.erased)) {
      const fresh = markProcessed(sql, 'notifications', INTAKE_CONSUMER, [...byId.keys()]);
      return collect(await sql<OutcomeRow[]>`${recordEvents(sql, items, fresh)}`);
    }
    return await sql.begin(async (tx) => {
      const fresh = await markProcessed(tx, 'notifications', INTAKE_CONSUMER, [...byId.keys()]);
      const todo = fresh.map((r) => byId.get(r.event_id)!).filter(Boolean);
      if (todo.length === 0) return outcomes;
      for (const d of todo) {
        if (d.erased) await scrubGuestNames(tx, d.source.workspaceId, d.erased.bookingReferences);
      }
      const rows = await tx<OutcomeRow[]>`${recordEvents(tx, todo, tx`select unnest(${tx.array(todo.map((d) => d.source.eventId))}::uuid[]) as event_id`)}`;
      for (const r of rows) {
        if (r.outcome !== 'delivered' || r.event_type !== 'user.erased') continue;
        const d = byId.get(r.event_id)!;
        await tx`
          insert into notifications.deletion_requests (event_id, workspace_id, booking_references, provider_ids, occurred_at)
          values (${d.source.eventId}, ${d.source.workspaceId}, ${tx.array(d.erased!.bookingReferences)}::text[],
                  ${tx.array(d.erased!.providerIds)}::text[], ${d.source.occurredAt})
          on conflict do nothing`;
      }
      return collect(rows);
    });
  }
}

/**
 * One statement recording `events` — those whose ids `fresh` answers (a subquery
 * yielding `event_id`: the ones just marked processed) — and answering each one's
 * outcome (OutcomeRow):
 * - its fact is recorded in `notifications.event_facts` (primary key: workspace, event
 *   type, subject), unless the fact is there already (`replayed`) or, for a
 *   confirmation, the booking's cancellation is (`after_cancellation`); only an event
 *   whose fact it recorded goes on:
 * - it is recorded in the workspace's events feed (event-feed.ts), and
 * - a delivery is inserted when the workspace's endpoint takes it now (`delivered`;
 *   `recorded` otherwise).
 *
 * A booking.confirmed of a booking already erased is stored without the guest's name,
 * in the feed and the delivery alike. The feed's positions: each workspace's head row
 * is locked by its upsert before the workspace's new events are numbered after it
 * (workspaces in id order, so two batches never wait for each other in a circle), and
 * stays locked until the commit. The endpoints' status and subscriptions are read
 * under a share lock (a concurrent registration commits before or after, never
 * half-way). Two batches recording the same fact at once: the second waits on the
 * first's uncommitted key, then skips it (`replayed`).
 */
function recordEvents(sql: Sql | Tx, events: Decoded[], fresh: PendingQuery<Row[]> | PendingQuery<{ event_id: string }[]>): PendingQuery<Row[]> {
  const srcs = events.map((d) => d.source);
  return sql`
    with fresh as (${fresh}),
    incoming as (
      select x.workspace_id, x.event_id, x.kind, x.subject, x.occurred_at, x.booking_reference, x.traceparent, x.ord,
             case when x.scrubbed is not null and exists (
               select 1 from notifications.erased_bookings b
               where b.workspace_id = x.workspace_id and b.booking_reference = x.booking_reference
             ) then x.scrubbed else x.body end as body
      from unnest(
        ${sql.array(srcs.map((x) => x.workspaceId))}::uuid[],
        ${sql.array(srcs.map((x) => x.eventId))}::uuid[],
        ${sql.array(srcs.map((x) => x.kind))}::text[],
        ${sql.array(events.map((d) => d.subject))}::text[],
        ${sql.array(srcs.map((x) => x.occurredAt))}::timestamptz[],
        ${sql.array(srcs.map((x) => x.bookingReference ?? ''))}::text[],
        ${sql.array(srcs.map((x) => x.body))}::text[],
        ${sql.array(srcs.map((x) => (x.kind === 'booking.confirmed' ? scrubGuestName(x.body) : '')))}::text[],
        ${sql.array(events.map((d) => d.traceparent ?? ''))}::text[]
      ) with ordinality as u(workspace_id, event_id, kind, subject, occurred_at, booking_reference, body, scrubbed, traceparent, ord)
      cross join lateral (
        select u.workspace_id, u.event_id, u.kind, u.subject, u.occurred_at,
               nullif(u.booking_reference, '') as booking_reference, u.body,
               nullif(u.scrubbed, '') as scrubbed, nullif(u.traceparent, '') as traceparent, u.ord
      ) x
      where x.event_id in (select event_id from fresh)
    ),
    facts as (
      insert into notifications.event_facts (workspace_id, event_type, subject, event_id)
      select i.workspace_id, i.kind, i.subject, i.event_id from incoming i
      where not (i.kind = 'booking.confirmed' and exists (
        select 1 from notifications.event_facts f
        where f.workspace_id = i.workspace_id and f.event_type = 'booking.cancelled' and f.subject = i.subject))
      order by i.ord
      on conflict do nothing
      returning event_id
    ),
    accepted as (
      select * from incoming where event_id in (select event_id from facts)
    ),
    feed_counts as (
      select workspace_id, count(*) as n from accepted group by workspace_id
    ),
    feed_heads as (
      insert into notifications.event_feed_heads as h (workspace_id, last_position)
      select workspace_id, n from feed_counts order by workspace_id
      on conflict (workspace_id) do update set last_position = h.last_position + excluded.last_position
      returning h.workspace_id, h.last_position
    ),
    feed as (
      insert into notifications.event_feed (workspace_id, position, event_id, event_type, booking_reference, envelope)
      select i.workspace_id, h.last_position - c.n + row_number() over (partition by i.workspace_id order by i.ord),
             i.event_id, i.kind, i.booking_reference, i.body
      from accepted i join feed_heads h using (workspace_id) join feed_counts c using (workspace_id)
      on conflict (workspace_id, event_id) do nothing
    ),
    delivered as (
      insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, traceparent)
      select e.workspace_id, x.event_id, x.kind, x.occurred_at, x.booking_reference, x.body, 'pending', now(), x.traceparent
      from accepted x
      join notifications.endpoints e
        on e.workspace_id = x.workspace_id and e.status = 'active' and x.kind = any(e.events)
      for share of e
      on conflict (workspace_id, event_id) do nothing
      returning workspace_id, event_id, event_type
    )
    select event_id, 'delivered' as outcome, workspace_id, event_type from delivered
    union all
    select event_id, 'recorded', workspace_id, kind from accepted
    where event_id not in (select event_id from delivered)
    union all
    select i.event_id,
           case when i.kind = 'booking.confirmed' and not exists (
             select 1 from notifications.event_facts f
             where f.workspace_id = i.workspace_id and f.event_type = i.kind and f.subject = i.subject)
           then 'after_cancellation' else 'replayed' end,
           i.workspace_id, i.kind
    from incoming i
    where i.event_id not in (select event_id from facts)`;
}
