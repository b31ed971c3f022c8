/**
 * One client process of the calendar race test (test/calendar/race.test.ts): fires
 * OPS calendar calls at once at CALENDAR_URL, starting at the wall-clock instant
 * START_AT (ms since the epoch) so that every client process collides, and prints one
 * JSON line with what happened.
 *
 * Environment: CALENDAR_URL, WORKSPACE_ID, LISTINGS (comma-separated), OPS, MODE
 * (`same-nights`: everything on nights [D0, D0+3) of the first listing;
 * `mixed`: random ranges in a 40-night window, blocks from a small pool of uids so
 * pushes also move blocks, holds, bookings, releases, cancellations, deletions),
 * CLIENT (a label), SEED.
 */
import { credentialInterceptor } from '../../support/credentials';
import { createClient, ConnectError } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../../gen/psync/calendar/v1/events_pb';
import { ErrorDetailSchema, ErrorReason } from '../../../gen/psync/common/v1/errors_pb';

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

const url = env('CALENDAR_URL');
const workspaceId = env('WORKSPACE_ID');
const listings = env('LISTINGS').split(',');
const ops = Number(env('OPS'));
const mode = env('MODE');
const label = env('CLIENT');
let seed = Number(process.env.SEED ?? '1');
const startAt = Number(process.env.START_AT ?? '0');

/** Deterministic pseudo-random numbers (mulberry32), so a failing run can be replayed. */
function rand(): number {
  seed |= 0;
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
const day = (n: number) => new Date(Date.UTC(2032, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

const sm = new Http2SessionManager(url);
// Every call is fired at once; with every core kept busy (PSYNC_TEST_CPU_LOAD,
// test/support/cpu-load.ts) the last ones are answered minutes later, not never.
const callTimeoutMs = process.env.PSYNC_TEST_CPU_LOAD ? 240_000 : 60_000;
const calendar = createClient(CalendarService, createGrpcTransport({ baseUrl: url, sessionManager: sm, defaultTimeoutMs: callTimeoutMs, interceptors: [credentialInterceptor()] }));

const outcome: Record<string, number> = {};
const unexpected: string[] = [];
const holds: string[] = [];
const bookings: string[] = [];
const note = (k: string) => (outcome[k] = (outcome[k] ?? 0) + 1);

async function attempt(kind: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
    note(`${kind}:ok`);
  } catch (err) {
    const e = ConnectError.from(err);
    const reason = e.findDetails(ErrorDetailSchema)[0]?.reason;
    if (reason === ErrorReason.CONFLICT) note(`${kind}:conflict`);
    else if (reason === ErrorReason.HOLD_NOT_LIVE) note(`${kind}:hold_not_live`);
    else {
      note(`${kind}:error`);
      unexpected.push(`${kind}: ${e.code} ${e.rawMessage}`);
    }
  }
}

function randomRange(): [string, string] {
  const a = Math.floor(rand() * 40);
  const n = 1 + Math.floor(rand() * 5);
  return [day(a), day(a + n)];
}

function operation(i: number): Promise<void> {
  if (mode === 'same-nights') {
    const listingId = listings[0]!;
    const [a, b] = [day(0), day(3)];
    if (i % 2 === 0) {
      return attempt('hold', async () => {
        const r = await calendar.placeHold({ listingId, checkIn: a, checkOut: b });
        holds.push(r.hold!.holdId);
      });
    }
    return attempt('block', () => calendar.putBlock({ workspaceId, externalUid: `${label}-${i}`, target: { case: 'listingId', value: listingId }, checkIn: a, checkOut: b }));
  }
  const listingId = pick(listings);
  const [a, b] = randomRange();
  const r = rand();
  if (r < 0.4) {
    // A small pool of uids: concurrent pushes of the same block, and moves.
    const uid = `blk-${Math.floor(rand() * 12)}`;
    return attempt('block', () => calendar.putBlock({ workspaceId, externalUid: uid, target: { case: 'listingId', value: listingId }, checkIn: a, checkOut: b }));
  }
  if (r < 0.7) {
    return attempt('hold', async () => {
      const res = await calendar.placeHold({ listingId, checkIn: a, checkOut: b, ttlSeconds: 1 + Math.floor(rand() * 3) });
      holds.push(res.hold!.holdId);
    });
  }
  if (r < 0.85) {
    return attempt('booking', async () => {
      const res = await calendar.confirmBooking({
        listingId,
        checkIn: a,
        checkOut: b,
        guestId: `g-${label}`,
        guestName: 'Race Guest',
        partySize: 1,
        amountPaid: { value: '1.00', currency: 'EUR' },
      });
      bookings.push(res.booking!.bookingReference);
    });
  }
  if (r < 0.9 && holds.length > 0) {
    const holdId = pick(holds);
    return attempt('convert', () =>
      calendar.confirmBooking({ holdId, guestId: `g-${label}`, guestName: 'Race Guest', partySize: 1, amountPaid: { value: '1.00', currency: 'EUR' } }),
    );
  }
  if (r < 0.94 && holds.length > 0) return attempt('release', () => calendar.releaseHold({ holdId: pick(holds) }));
  if (r < 0.97 && bookings.length > 0) {
    const initiatedBy = rand() < 0.5 ? CancellationInitiator.GUEST : CancellationInitiator.HOST;
    return attempt('cancel', () => calendar.cancelBooking({ bookingReference: pick(bookings), initiatedBy }));
  }
  return attempt('delete', () => calendar.deleteBlock({ workspaceId, externalUid: `blk-${Math.floor(rand() * 12)}` }));
}

async function main(): Promise<void> {
  // Warm the HTTP/2 session so the first wave is not serialised behind a handshake.
  await calendar.listBlocks({ workspaceId, pageSize: 1 });
  const wait = startAt - Date.now();
  // timing under test: every client process starts firing at the same instant.
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  if (mode === 'same-nights') {
    await Promise.all(Array.from({ length: ops }, (_, i) => operation(i)));
  } else {
    // Two waves: the second also releases, converts and cancels what the first made.
    await Promise.all(Array.from({ length: Math.ceil(ops / 2) }, (_, i) => operation(i)));
    await Promise.all(Array.from({ length: Math.floor(ops / 2) }, (_, i) => operation(i + ops)));
  }
  process.stdout.write(`${JSON.stringify({ client: label, outcome, unexpected })}\n`);
  sm.abort();
}

main().catch((err) => {
  process.stderr.write(`race-client ${label}: ${err?.stack ?? err}\n`);
  process.exit(1);
});
