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
import type { Caller } from '../kit/rpc';
import type { Logger } from '../kit/base';
import type { Sql } from '../kit/db';
import { PeriodicJob } from '../kit/work';
import { checkRange } from '../domain';
import { notFound } from '../kit/rpc';
import { isUuid } from '../kit/base';
import { failedPrecondition, invalidArgument } from './errors';
import { calendarChanged } from './event-log';
import { refuseConflicts, scanConflicts, withRetries } from './claims';
import type { CalendarDeps } from './calendar-deps';
import { findIdempotentResult, idempotencyScope, keyArguments, resultOfKeyFound, type KeyFound } from './idempotency';
import { currentTraceHeaders } from '../kit/telemetry';

/** What `calendar.place_hold` answers (services/calendar/functions/place_hold.sql). */
interface PlaceHoldResult extends KeyFound {
  outcome: 'placed' | 'conflict' | 'key_found';
  conflicts: string[];
  expires_at: Date | null;
}

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
  // One statement, in its implicit transaction: the key (a concurrent first use waits
  // for the other, then answers its hold), the listing's lock, hold expiry, the conflict
  // scan, the hold with its claim and event, the key's record (SQL `calendar.place_hold`).
  // A refusal writes nothing.
  const sql = deps.sql;
  const result = await withRetries(
    async () => {
      const [r] = await sql<PlaceHoldResult[]>`
        select * from calendar.place_hold(${holdId}::uuid, ${listing.listingId}, ${listing.workspaceId}, ${span.checkIn}::date, ${span.checkOut}::date,
          ${req.requiresPayment}, ${ttl}, ${at}, ${sql.json(events)}, ${sql.json(currentTraceHeaders())}, ${keyArguments(sql, idempotency)})
      `;
      return r!;
    },
    () => scanConflicts(sql, listing.listingId, span.checkIn, span.checkOut, 'all'),
  );
  if (result.outcome === 'key_found') return { hold: await readHold(deps, resultOfKeyFound(idempotency, result)) };
  refuseConflicts(result.conflicts);
  deps.eventsCommitted();
  return {
    hold: {
      holdId,
      listingId: listing.listingId,
      checkIn: span.checkIn,
      checkOut: span.checkOut,
      expiresAt: timestampFromDate(result.expires_at!),
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
  const [found] = await deps.sql<{ listing_id: string; workspace_id: string; status: string; check_in: string; check_out: string }[]>`
    select listing_id, workspace_id, status, check_in::text, check_out::text from calendar.holds where hold_id = ${req.holdId}
  `;
  if (!found) throw notFound(ErrorReason.HOLD_NOT_FOUND, 'no such hold');
  if (found.status === 'converted') {
    throw failedPrecondition(ErrorReason.HOLD_NOT_LIVE, 'the hold was converted into a booking; cancel the booking instead');
  }
  if (found.status !== 'live') return { holdId: req.holdId, released: true };

  const at = new Date();
  // Written only if the statement releases the hold (a hold's listing and nights never change).
  const events = [
    calendarChanged({
      at,
      workspaceId: found.workspace_id,
      listingId: found.listing_id,
      kind: 'hold_released',
      holder: { kind: 'hold', id: req.holdId },
      released: { checkIn: found.check_in, checkOut: found.check_out },
    }),
  ];
  // One statement: the listing's lock, hold expiry (an overdue hold, this one included,
  // expires rather than being released), the release with its event (SQL `calendar.release_hold`).
  const sql = deps.sql;
  const outcome = await withRetries(async () => {
    const [r] = await sql<{ events: number; status: string | null }[]>`
      select * from calendar.release_hold(${req.holdId}::uuid, ${found.listing_id}, ${at}, ${sql.json(events)}, ${sql.json(currentTraceHeaders())})
    `;
    return r!;
  });
  if (outcome.events > 0) deps.eventsCommitted();
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
      // One statement: the listing's lock, then its overdue holds expire (SQL `calendar.sweep_holds`).
      const n = await withRetries(async () => {
        const [row] = await this.sql<{ expired: number }[]>`
          select calendar.sweep_holds(${listingId}, ${new Date()}, ${this.sql.json(currentTraceHeaders())}) as expired
        `;
        return row!.expired;
      });
      if (n > 0) touched++;
    }
    if (touched > 0) this.onEvents();
    return touched;
  }
}
