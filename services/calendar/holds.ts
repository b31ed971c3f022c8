/**
 * Marketplace holds (docs/calendar.md "Holds and bookings"): nights kept for a guest while they check out.
 *
 * A hold is live from PlaceHold until it is released, converted into a booking or its
 * `expires_at` passes (default lifetime HOLD_TTL_SECONDS, 900 s). Only a live hold has
 * a row in `calendar.claims`; writers expire overdue holds of a listing under its lock
 * before claiming nights there, and `HoldSweeper` expires the rest in the background,
 * so an expired hold never blocks anything and always gets its HOLD_EXPIRED event.
 */
import { randomUUID } from 'node:crypto';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  PlaceHoldRequestSchema,
  type HoldSchema,
  type PlaceHoldRequest,
  type PlaceHoldResponseSchema,
  type ReleaseHoldRequest,
  type ReleaseHoldResponseSchema,
} from '../../gen/psync/calendar/v1/calendar_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { Caller } from '../kit/internal-auth';
import type { Logger } from '../kit/logger';
import type { Sql } from '../kit/database';
import { PeriodicJob } from '../kit/periodic';
import { checkRange } from '../kit/night-range';
import { notFound } from '../kit/errors';
import { isUuid } from '../kit/uuid';
import { failedPrecondition, invalidArgument } from './errors';
import { appendEvents, calendarChanged, type PendingEvent } from './event-log';
import { expireHolds, lockListing, refuseConflicts, scanConflicts, withListingTransaction } from './claims';
import type { CalendarDeps } from './calendar-deps';
import { findIdempotentResult, idempotencyScope, lockIdempotencyKey, recordIdempotencyKey } from './idempotency';

/** True for a syntactically valid hold id (holds are uuids; anything else is simply unknown). */
export function isHoldId(id: string): boolean {
  return isUuid(id);
}

/** Sandbox workspaces never reach a payment provider (spec: "Availability"). */
export function refuseSandboxPayment(environment: 'sandbox' | 'production', requiresPayment: boolean): void {
  if (environment === 'sandbox' && requiresPayment) {
    throw failedPrecondition(ErrorReason.SANDBOX_PAYMENT_REFUSED, 'sandbox listings never reach a payment provider: a hold or booking that would end in a real charge is refused');
  }
}

/**
 * PlaceHold: a live hold on free nights, or CONFLICT listing every night already taken.
 * With an idempotency key (idempotency.ts) a retry answers the hold the key placed.
 * The fields (listing_id, dates, ttl_seconds 1 s to 1 day, the key) were checked
 * against calendar.proto's rules before this runs; the range rule is the calendar's.
 */
export async function placeHold(deps: CalendarDeps, req: PlaceHoldRequest, caller?: Caller): Promise<MessageInitShape<typeof PlaceHoldResponseSchema>> {
  const { span, problems } = checkRange(req.checkIn, req.checkOut);
  if (!span) throw invalidArgument(problems);
  const ttl = req.ttlSeconds ?? deps.holdTtlSeconds;
  const idempotency = idempotencyScope('PlaceHold', PlaceHoldRequestSchema, req, caller);
  if (idempotency) {
    const first = await findIdempotentResult(deps.sql, idempotency);
    if (first) return { hold: await readHold(deps, first) };
  }

  const listing = await deps.listings.resolve(req.listingId);
  refuseSandboxPayment(listing.environment, req.requiresPayment);

  const holdId = randomUUID();
  const at = new Date();
  const hold = await withListingTransaction(
    deps.sql,
    async (tx) => {
      // A concurrent first use of the key waits here, then answers the winner's hold.
      if (idempotency) {
        const first = await lockIdempotencyKey(tx, idempotency);
        if (first) return { replay: first };
      }
      // Pipelined, in this order: the lock, hold expiry (writes its own events), the conflict scan.
      const [, , conflicts] = await Promise.all([
        lockListing(tx, listing.listingId),
        expireHolds(tx, listing.listingId, at),
        scanConflicts(tx, listing.listingId, span.checkIn, span.checkOut, 'all'),
      ]);
      refuseConflicts(conflicts);
      const events = [
        calendarChanged({
          at,
          workspaceId: listing.workspaceId,
          listingId: listing.listingId,
          kind: 'hold_placed',
          holder: { kind: 'hold', id: holdId },
          held: { checkIn: span.checkIn, checkOut: span.checkOut },
        }),
      ];
      // Pipelined: the hold with its claim, then its event.
      const [[row]] = await Promise.all([
        tx<{ expires_at: Date }[]>`
        with h as (
          insert into calendar.holds (hold_id, listing_id, workspace_id, check_in, check_out, requires_payment, status, expires_at)
          values (${holdId}, ${listing.listingId}, ${listing.workspaceId}, ${span.checkIn}, ${span.checkOut},
                  ${req.requiresPayment}, 'live', clock_timestamp() + make_interval(secs => ${ttl}))
          returning hold_id, listing_id, check_in, check_out, expires_at
        ), c as (
          insert into calendar.claims (listing_id, holder_kind, holder_id, nights)
          select listing_id, 'hold', hold_id::text, daterange(check_in, check_out) from h
        )
        select expires_at from h
      `,
        appendEvents(tx, events),
      ]);
      if (idempotency) await recordIdempotencyKey(tx, idempotency, holdId);
      return row!;
    },
    () => scanConflicts(deps.sql, listing.listingId, span.checkIn, span.checkOut, 'all'),
  );
  if ('replay' in hold) return { hold: await readHold(deps, hold.replay) };
  deps.eventsCommitted();
  return {
    hold: {
      holdId,
      listingId: listing.listingId,
      checkIn: span.checkIn,
      checkOut: span.checkOut,
      expiresAt: timestampFromDate(hold.expires_at),
      requiresPayment: req.requiresPayment,
    },
  };
}

/** The hold `holdId` as placed (an idempotent retry's answer; it may have expired, been released or converted since). */
async function readHold(deps: CalendarDeps, holdId: string): Promise<MessageInitShape<typeof HoldSchema>> {
  const [row] = await deps.sql<{ listing_id: string; check_in: string; check_out: string; expires_at: Date; requires_payment: boolean }[]>`
    select listing_id, check_in::text, check_out::text, expires_at, requires_payment from calendar.holds where hold_id = ${holdId}
  `;
  if (!row) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'the hold this idempotency key placed no longer exists');
  return {
    holdId,
    listingId: row.listing_id,
    checkIn: row.check_in,
    checkOut: row.check_out,
    expiresAt: timestampFromDate(row.expires_at),
    requiresPayment: row.requires_payment,
  };
}

/**
 * ReleaseHold: frees a live hold's nights. Idempotent: an already released or expired
 * hold answers `released` too. A hold converted into a booking is not a hold any more:
 * FAILED_PRECONDITION (HOLD_NOT_LIVE) — cancel the booking instead.
 */
export async function releaseHold(deps: CalendarDeps, req: ReleaseHoldRequest): Promise<MessageInitShape<typeof ReleaseHoldResponseSchema>> {
  if (!isHoldId(req.holdId)) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'no such hold');
  const [found] = await deps.sql<{ listing_id: string; status: string }[]>`
    select listing_id, status from calendar.holds where hold_id = ${req.holdId}
  `;
  if (!found) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'no such hold');
  if (found.status === 'converted') {
    throw failedPrecondition(ErrorReason.HOLD_NOT_LIVE, 'the hold was converted into a booking; cancel the booking instead');
  }
  if (found.status !== 'live') return { holdId: req.holdId, released: true };

  const at = new Date();
  const outcome = await withListingTransaction(deps.sql, async (tx) => {
    await lockListing(tx, found.listing_id);
    // Overdue holds (this one included) expire rather than being released.
    const expired = await expireHolds(tx, found.listing_id, at);
    const events: PendingEvent[] = [];
    const [row] = await tx<{ workspace_id: string; check_in: string; check_out: string }[]>`
      with h as (
        update calendar.holds set status = 'released', ended_at = clock_timestamp()
        where hold_id = ${req.holdId} and status = 'live'
        returning hold_id, workspace_id, check_in, check_out
      ), c as (
        delete from calendar.claims where holder_kind = 'hold' and holder_id in (select hold_id::text from h)
      )
      select workspace_id, check_in::text, check_out::text from h
    `;
    if (row) {
      events.push(
        calendarChanged({
          at,
          workspaceId: row.workspace_id,
          listingId: found.listing_id,
          kind: 'hold_released',
          holder: { kind: 'hold', id: req.holdId },
          released: { checkIn: row.check_in, checkOut: row.check_out },
        }),
      );
    }
    await appendEvents(tx, events);
    const [now] = await tx<{ status: string }[]>`select status from calendar.holds where hold_id = ${req.holdId}`;
    return { wrote: expired > 0 || events.length > 0, status: now?.status };
  });
  if (outcome.wrote) deps.eventsCommitted();
  if (outcome.status === 'converted') {
    throw failedPrecondition(ErrorReason.HOLD_NOT_LIVE, 'the hold was converted into a booking; cancel the booking instead');
  }
  return { holdId: req.holdId, released: true };
}

/**
 * Expires overdue holds of quiet listings in the background (writers expire them on
 * their own listing anyway), so HOLD_EXPIRED events go out within a few seconds.
 * Safe with several replicas: each listing is expired under its lock, and a hold
 * expires once (its status changes from `live` exactly once).
 */
export class HoldSweeper {
  private readonly job: PeriodicJob;

  constructor(
    private readonly sql: Sql,
    log: Logger,
    private readonly onEvents: () => void,
    intervalMs = 2000,
  ) {
    this.job = new PeriodicJob(
      () => this.sweepOnce(),
      intervalMs,
      (err) => log.warn({ err }, 'calendar: hold expiry sweep failed; retrying'),
    );
  }

  start(): void {
    this.job.start();
  }

  async stop(): Promise<void> {
    await this.job.stop();
  }

  /** Expires every overdue hold now; resolves with how many listings had some. */
  async sweepOnce(): Promise<number> {
    const listings = await this.sql<{ listing_id: string }[]>`
      select distinct listing_id from calendar.holds
      where status = 'live' and expires_at <= clock_timestamp()
      limit 500
    `;
    let touched = 0;
    for (const { listing_id: listingId } of listings) {
      if (this.job.isStopped) break;
      const n = await withListingTransaction(this.sql, async (tx) => {
        await lockListing(tx, listingId);
        return expireHolds(tx, listingId, new Date());
      });
      if (n > 0) touched++;
    }
    if (touched > 0) this.onEvents();
    return touched;
  }
}
