/**
 * Idempotency keys of PlaceHold, ConfirmBooking and CancelBooking
 * (services/calendar/idempotency.ts, migration 0007; docs/marketplace.md "Idempotency
 * keys") through a real Connect/gRPC server with the internal authentication, against
 * the test database (real PostgreSQL with DATABASE_URL, embedded PGlite otherwise):
 *
 * - a retry with the same key and request answers the first result (the same hold,
 *   booking reference, cancellation) even when the first answer never arrived, and
 *   writes nothing: no row, no event;
 * - the same key with a different request, or for another RPC → FAILED_PRECONDITION
 *   (IDEMPOTENCY_KEY_REUSED), nothing written;
 * - keys are per caller: two callers use one key independently;
 * - concurrent calls with one key → exactly one hold or booking, every caller gets it;
 * - a failed call records no key; a malformed key is INVALID_ARGUMENT;
 * - keys past the retention (24 h) are pruned by the housekeeping, younger ones kept.
 */
import { Code, ConnectError, createClient, type Client, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { ROLES } from '../../services/kit/rpc';
import { HealthState } from '../../services/kit/rpc';
import { authInterceptor, CredentialRegistry, tokenSha256 } from '../../services/kit/rpc';
import { requestGuardInterceptor } from '../../services/kit/rpc';
import { validationInterceptor } from '../../services/kit/rpc';
import { startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { notFound } from '../../services/kit/rpc';
import type { CalendarDeps } from '../../services/calendar/calendar-deps';
import { IDEMPOTENCY_RETENTION_HOURS, IdempotencyKeyPruner, pruneIdempotencyKeysOnce } from '../../services/calendar/idempotency';
import type { ListingDirectory, ListingInfo } from '../../services/calendar/listings';
import { calendarModule } from '../../services/calendar/module';
import { registerCalendarService } from '../../services/calendar/service';
import { WatchHub } from '../../services/calendar/watch';
import { testLogger } from '../support/bus';
import { credentialInterceptor, TEST_TOKENS } from '../support/credentials';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { connectErrorOf, day, eventually, reasonOf, violationsOf } from './support';

jest.setTimeout(120_000);

const WS = '6f1c2a8e-0000-4000-8000-0000000d1d1d';
let db: TestDatabase;
let hub: WatchHub;
let server: InternalServer;
let sessions: Http2SessionManager;
let marketplace: Client<typeof CalendarService>;
let operator: Client<typeof CalendarService>;
/** The marketplace's client whose every answer is lost on the way back (after the server committed). */
let lossy: Client<typeof CalendarService>;

/** Listings the stub catalog knows. */
const listings = new Map<string, ListingInfo>();
let counter = 0;
function newListing(): string {
  const id = `lst-idem-${process.pid}-${++counter}`;
  listings.set(id, { listingId: id, workspaceId: WS, environment: 'sandbox', checkInTime: '15:00', checkOutTime: '11:00' });
  return id;
}
const key = (label: string) => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
  hub = new WatchHub();
  const directory = {
    async resolve(id: string) {
      const l = listings.get(id);
      if (!l) throw notFound(ErrorReason.LISTING_NOT_FOUND, 'no such listing');
      return l;
    },
  } as unknown as ListingDirectory;
  const deps: CalendarDeps = { sql: db.sql, log: testLogger(), listings: directory, holdTtlSeconds: 900, eventsCommitted: () => hub.notify() };
  const registry = new CredentialRegistry(ROLES.map((role) => ({ role, sha256: tokenSha256(TEST_TOKENS[role]).toString('hex') })));
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log: testLogger(),
    health: new HealthState(),
    // As run-process.ts lists them: authentication, then the request guard and the proto's rules.
    interceptors: [authInterceptor({ registry, log: testLogger() }), requestGuardInterceptor, validationInterceptor],
    routes: (router) => registerCalendarService(router, deps, hub),
  });
  sessions = new Http2SessionManager(server.url);
  const client = (...interceptors: Interceptor[]) =>
    createClient(CalendarService, createGrpcTransport({ baseUrl: server.url, sessionManager: sessions, interceptors, defaultTimeoutMs: 30_000 }));
  marketplace = client(credentialInterceptor('marketplace'));
  operator = client(credentialInterceptor('operator'));
  const loseAnswer: Interceptor = (next) => async (req) => {
    await next(req);
    throw new ConnectError('the connection dropped before the answer arrived', Code.Unavailable);
  };
  lossy = client(loseAnswer, credentialInterceptor('marketplace'));
}, 120_000);

afterAll(async () => {
  hub?.close();
  sessions?.abort();
  await server?.close(1000);
  await db?.stop();
});

/** Row counts of what a write leaves behind, for one listing. */
async function footprint(listingId: string): Promise<{ holds: number; bookings: number; events: number; claims: number }> {
  const [r] = await db.sql<{ holds: number; bookings: number; events: number; claims: number }[]>`
    select (select count(*)::int from calendar.holds where listing_id = ${listingId}) as holds,
           (select count(*)::int from calendar.bookings where listing_id = ${listingId}) as bookings,
           (select count(*)::int from calendar.events where listing_id = ${listingId}) as events,
           (select count(*)::int from calendar.claims where listing_id = ${listingId}) as claims`;
  return r!;
}

async function keyRows(k: string): Promise<{ caller: string; rpc: string; result_ref: string }[]> {
  return db.sql<{ caller: string; rpc: string; result_ref: string }[]>`
    select caller, rpc, result_ref from calendar.idempotency_keys where key = ${k} order by caller`;
}

const direct = (listingId: string, from: number, to: number, extra: Record<string, unknown> = {}) => ({
  listingId,
  checkIn: day(from),
  checkOut: day(to),
  guestId: 'guest-idem',
  guestName: 'Ada Lovelace',
  partySize: 2,
  amountPaid: { value: '240.00', currency: 'EUR' },
  ...extra,
});

describe('a retry with the same key and request answers the first result and writes nothing', () => {
  test('PlaceHold: the same hold, even when the first answer was lost', async () => {
    const listingId = newListing();
    const k = key('hold');
    const req = { listingId, checkIn: day(0), checkOut: day(3), idempotencyKey: k };
    const lost = await connectErrorOf(lossy.placeHold(req));
    expect(lost.code).toBe(Code.Unavailable);
    const after = await footprint(listingId);
    expect(after).toEqual({ holds: 1, bookings: 0, events: 1, claims: 1 });

    const retry = await marketplace.placeHold(req);
    const again = await marketplace.placeHold(req);
    expect(again.hold).toEqual(retry.hold);
    const [row] = await db.sql<{ hold_id: string }[]>`select hold_id::text from calendar.holds where listing_id = ${listingId}`;
    expect(retry.hold!.holdId).toBe(row!.hold_id);
    expect(retry.hold).toMatchObject({ listingId, checkIn: day(0), checkOut: day(3), requiresPayment: false });
    expect(await footprint(listingId)).toEqual(after);
    expect(await keyRows(k)).toEqual([{ caller: 'marketplace', rpc: 'PlaceHold', result_ref: row!.hold_id }]);
  });

  test('ConfirmBooking (direct): the same booking reference, even when the first answer was lost', async () => {
    const listingId = newListing();
    const k = key('book');
    const req = direct(listingId, 0, 2, { idempotencyKey: k });
    expect((await connectErrorOf(lossy.confirmBooking(req))).code).toBe(Code.Unavailable);
    const after = await footprint(listingId);
    expect(after).toMatchObject({ bookings: 1, claims: 1 });

    const retry = await marketplace.confirmBooking(req);
    const [row] = await db.sql<{ booking_reference: string }[]>`select booking_reference from calendar.bookings where listing_id = ${listingId}`;
    expect(retry.booking!.bookingReference).toBe(row!.booking_reference);
    expect((await marketplace.confirmBooking(req)).booking!.bookingReference).toBe(row!.booking_reference);
    expect(await footprint(listingId)).toEqual(after);
  });

  test('ConfirmBooking from a hold: the same booking, and the converted hold is not "not live" for the retry', async () => {
    const listingId = newListing();
    const { hold } = await marketplace.placeHold({ listingId, checkIn: day(10), checkOut: day(12) });
    const req = { holdId: hold!.holdId, guestId: 'g', guestName: 'Grace Hopper', partySize: 1, amountPaid: { value: '99.00', currency: 'EUR' }, idempotencyKey: key('fromhold') };
    const first = await marketplace.confirmBooking(req);
    const after = await footprint(listingId);
    const retry = await marketplace.confirmBooking(req);
    expect(retry.booking!.bookingReference).toBe(first.booking!.bookingReference);
    expect(retry.booking!.holdId).toBe(hold!.holdId);
    expect(await footprint(listingId)).toEqual(after);
  });

  test('CancelBooking: the same cancellation, one BookingCancelled event', async () => {
    const listingId = newListing();
    const { booking } = await marketplace.confirmBooking(direct(listingId, 0, 2));
    const req = { bookingReference: booking!.bookingReference, initiatedBy: CancellationInitiator.GUEST, idempotencyKey: key('cancel') };
    expect((await connectErrorOf(lossy.cancelBooking(req))).code).toBe(Code.Unavailable);
    const after = await footprint(listingId);
    const retry = await marketplace.cancelBooking(req);
    const [row] = await db.sql<{ cancelled_at: Date }[]>`select cancelled_at from calendar.bookings where booking_reference = ${booking!.bookingReference}`;
    expect(retry).toMatchObject({ bookingReference: booking!.bookingReference, cancelled: true });
    expect(retry.cancelledAt!.seconds).toBe(BigInt(Math.floor(row!.cancelled_at.getTime() / 1000)));
    expect(await footprint(listingId)).toEqual(after);
    const [cancelled] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from calendar.events where listing_id = ${listingId} and type = 'booking_cancelled'`;
    expect(cancelled!.n).toBe(1);
  });
});

describe('the same key for a different request is refused, clearly, and writes nothing', () => {
  test('PlaceHold with other nights → FAILED_PRECONDITION (IDEMPOTENCY_KEY_REUSED)', async () => {
    const listingId = newListing();
    const k = key('reuse');
    await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2), idempotencyKey: k });
    const before = await footprint(listingId);
    const err = await connectErrorOf(marketplace.placeHold({ listingId, checkIn: day(5), checkOut: day(7), idempotencyKey: k }));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(reasonOf(err)).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    expect(err.rawMessage).toMatch(/idempotency_key was already used for a different request/);
    // Any field counts, ttl_seconds included.
    const ttl = await connectErrorOf(marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2), ttlSeconds: 60, idempotencyKey: k }));
    expect(reasonOf(ttl)).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    expect(await footprint(listingId)).toEqual(before);
  });

  test('a key of PlaceHold sent with ConfirmBooking or CancelBooking → the same error', async () => {
    const listingId = newListing();
    const k = key('cross');
    await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2), idempotencyKey: k });
    const before = await footprint(listingId);
    expect(reasonOf(await connectErrorOf(marketplace.confirmBooking(direct(listingId, 4, 6, { idempotencyKey: k }))))).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    const other = newListing();
    const { booking } = await marketplace.confirmBooking(direct(other, 0, 1));
    const err = await connectErrorOf(marketplace.cancelBooking({ bookingReference: booking!.bookingReference, initiatedBy: CancellationInitiator.GUEST, idempotencyKey: k }));
    expect(reasonOf(err)).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    expect(await footprint(listingId)).toEqual(before);
    expect((await footprint(other)).bookings).toBe(1);
    const [status] = await db.sql<{ status: string }[]>`select status from calendar.bookings where booking_reference = ${booking!.bookingReference}`;
    expect(status!.status).toBe('confirmed');
  });

  test('ConfirmBooking with another guest name under the same key → refused; the booking stands unchanged', async () => {
    const listingId = newListing();
    const k = key('guest');
    const first = await marketplace.confirmBooking(direct(listingId, 0, 2, { idempotencyKey: k }));
    const err = await connectErrorOf(marketplace.confirmBooking(direct(listingId, 0, 2, { idempotencyKey: k, guestName: 'Someone Else' })));
    expect(reasonOf(err)).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    const retry = await marketplace.confirmBooking(direct(listingId, 0, 2, { idempotencyKey: k }));
    expect(retry.booking).toEqual(first.booking);
  });
});

test('keys are per caller: two callers use the same key independently', async () => {
  const listingId = newListing();
  const k = key('shared');
  const a = await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2), idempotencyKey: k });
  const b = await operator.placeHold({ listingId, checkIn: day(3), checkOut: day(5), idempotencyKey: k });
  expect(b.hold!.holdId).not.toBe(a.hold!.holdId);
  expect((await footprint(listingId)).holds).toBe(2);
  expect((await keyRows(k)).map((r) => [r.caller, r.result_ref])).toEqual([
    ['marketplace', a.hold!.holdId],
    ['operator', b.hold!.holdId],
  ]);
  // Each caller's retry answers its own hold.
  expect((await operator.placeHold({ listingId, checkIn: day(3), checkOut: day(5), idempotencyKey: k })).hold!.holdId).toBe(b.hold!.holdId);
  expect((await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2), idempotencyKey: k })).hold!.holdId).toBe(a.hold!.holdId);
});

describe('concurrent calls with one key: exactly one effect, everyone gets it', () => {
  test('8 × ConfirmBooking at once → one booking, one reference', async () => {
    const listingId = newListing();
    const req = direct(listingId, 0, 3, { idempotencyKey: key('race') });
    const answers = await Promise.all(Array.from({ length: 8 }, () => marketplace.confirmBooking(req)));
    expect(new Set(answers.map((a) => a.booking!.bookingReference)).size).toBe(1);
    expect(await footprint(listingId)).toMatchObject({ bookings: 1, claims: 1 });
  });

  test('8 × PlaceHold at once, and the same key for other listings at the same time → one hold, the rest refused', async () => {
    const listingId = newListing();
    const k = key('race-hold');
    const req = { listingId, checkIn: day(0), checkOut: day(3), idempotencyKey: k };
    const others = [newListing(), newListing()];
    const results = await Promise.allSettled([
      ...Array.from({ length: 8 }, () => marketplace.placeHold(req)),
      ...others.map((o) => marketplace.placeHold({ ...req, listingId: o })),
    ]);
    const held = results.slice(0, 8).map((r) => (r.status === 'fulfilled' ? r.value.hold!.holdId : String(r.reason)));
    const crossing = results.slice(8);
    const winnerIsMain = new Set(held).size === 1 && !held[0]!.startsWith('ConnectError');
    if (winnerIsMain) {
      for (const r of crossing) expect(r.status === 'rejected' && reasonOf(ConnectError.from(r.reason))).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
      expect((await footprint(listingId)).holds).toBe(1);
    } else {
      // One of the other listings won the key: every call for the main listing is refused.
      for (const r of results.slice(0, 8)) expect(r.status === 'rejected' && reasonOf(ConnectError.from(r.reason))).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
    }
    const total = (await footprint(listingId)).holds + (await footprint(others[0]!)).holds + (await footprint(others[1]!)).holds;
    expect(total).toBe(1);
    expect(await keyRows(k)).toHaveLength(1);
  });
});

describe('what is not remembered', () => {
  test('a call that fails records no key: retrying it runs it anew', async () => {
    const listingId = newListing();
    const blocker = await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(2) });
    const k = key('conflict');
    const req = { listingId, checkIn: day(1), checkOut: day(3), idempotencyKey: k };
    const err = await connectErrorOf(marketplace.placeHold(req));
    expect(reasonOf(err)).toBe(ErrorReason.CONFLICT);
    expect(await keyRows(k)).toEqual([]);
    await marketplace.releaseHold({ holdId: blocker.hold!.holdId });
    const ok = await marketplace.placeHold(req);
    expect(ok.hold!.checkIn).toBe(day(1));
    expect(await keyRows(k)).toHaveLength(1);
  });

  test('a malformed key is INVALID_ARGUMENT naming idempotency_key', async () => {
    const listingId = newListing();
    for (const [bad, code] of [
      ['', 'min_length'],
      ['x'.repeat(256), 'max_length'],
      ['has space', 'pattern'],
      ['ключ', 'pattern'],
    ] as const) {
      const err = await connectErrorOf(marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(1), idempotencyKey: bad }));
      expect([bad.slice(0, 10), err.code, violationsOf(err)]).toEqual([bad.slice(0, 10), Code.InvalidArgument, [{ field: 'idempotency_key', code }]]);
    }
    expect(await footprint(listingId)).toEqual({ holds: 0, bookings: 0, events: 0, claims: 0 });
  });
});

describe(`retention: keys are kept ${IDEMPOTENCY_RETENTION_HOURS} h, then pruned by the housekeeping`, () => {
  test('a key past the retention is deleted and may be used again; a younger one is kept', async () => {
    const listingId = newListing();
    const old = key('old');
    const young = key('young');
    await marketplace.placeHold({ listingId, checkIn: day(0), checkOut: day(1), idempotencyKey: old });
    await marketplace.placeHold({ listingId, checkIn: day(2), checkOut: day(3), idempotencyKey: young });
    await db.sql`update calendar.idempotency_keys set created_at = now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS + 1}) where key = ${old}`;
    await db.sql`update calendar.idempotency_keys set created_at = now() - make_interval(hours => ${IDEMPOTENCY_RETENTION_HOURS - 1}) where key = ${young}`;

    // The calendar's housekeeping job (module.ts starts it; it prunes at once on start).
    const pruner = new IdempotencyKeyPruner(db.sql, testLogger());
    pruner.start();
    try {
      await eventually(async () => (await keyRows(old)).length === 0, 20_000, 'the old key to be pruned');
    } finally {
      await pruner.stop();
    }
    expect(await keyRows(young)).toHaveLength(1);
    expect(await pruneIdempotencyKeysOnce(db.sql)).toBe(0);

    // The pruned key now stands for nothing: another request under it is a new hold.
    const reused = await marketplace.placeHold({ listingId, checkIn: day(5), checkOut: day(6), idempotencyKey: old });
    expect(reused.hold!.checkIn).toBe(day(5));
    // The young key still answers its first hold's request only.
    expect(reasonOf(await connectErrorOf(marketplace.placeHold({ listingId, checkIn: day(8), checkOut: day(9), idempotencyKey: young })))).toBe(ErrorReason.IDEMPOTENCY_KEY_REUSED);
  });
});
