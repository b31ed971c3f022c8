/**
 * PostgreSQL failover under traffic (docs/operations.md "PostgreSQL high availability").
 *
 * The whole system (one all-in-one process, a private nats-server when installed, else
 * the in-process bus) runs on a private primary with a synchronous streaming standby
 * (support/postgres-pair.ts), given both through one multi-host DATABASE_URL with
 * `target_session_attrs=read-write`. Under continuous traffic of every acknowledged
 * write — block pushes and webhook endpoint registrations through the gateway, API keys
 * through the identity RPC (as `psync key issue` does), bookings through the calendar RPC
 * as the marketplace makes them (retried with their idempotency key on UNAVAILABLE, on
 * a few nights so attempts collide) — two faults:
 *
 * 1. `postgres-failover`: the primary crashes (`pg_ctl -m immediate`), the standby is
 *    promoted a moment later;
 * 2. `postgres-demoted-primary`: the crashed node, rebuilt as the new primary's
 *    standby, is promoted while the serving primary turns read-only under the open
 *    connections (what a demoted primary answers): the process must notice (SQLSTATE
 *    25006) and reconnect to the read-write host.
 *
 * Afterwards, on the new primary: every acknowledged write is there, no night is sold
 * twice, no retried booking was made twice; every gateway answer during the fault was a
 * success, a contract refusal or a `503 service_unavailable` problem document (no other
 * 5xx, no dropped connection) and every RPC failure UNAVAILABLE; writes succeed again
 * within 30 s of the promotion.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Code, ConnectError } from '@connectrpc/connect';
import { send, jsonRequest, type Received, type SentRequest } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { internalClients, type InternalClients } from '../support/internal-clients';
import { hasNatsServer, startPrivateNats, type PrivateNats } from '../support/private-nats';
import { privatePostgresUnavailable } from '../support/private-postgres';
import { firstLogEvent, logEvents, startSystem, stopAllSystems, uniqueBusPrefix, type RunningSystem } from '../support/system';
import { FIGURES_DIR, non503Errors, recordFigures } from './support/figures';
import { startPostgresPair, type PgNode, type PostgresPair } from './support/postgres-pair';
import { sleep } from '../support/eventually';

jest.setTimeout(300_000);

const unavailable = privatePostgresUnavailable();
const describeWithPair = unavailable ? describe.skip : describe;
if (unavailable) test.skip(`private PostgreSQL unavailable: ${unavailable}`, () => undefined);

const PARTNERS = 3;
const BOOKING_LOOPS = 2;
/** The booking loops choose among this many nights ahead of a window that moves by one night every NIGHT_EVERY_MS: attempts collide, and new nights keep coming. */
const BOOKABLE_NIGHTS = 6;
const NIGHT_EVERY_MS = 250;
const RECOVERY_LIMIT_S = 30;
const day = (base: string, offset: number) => new Date(Date.parse(`${base}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);

let pair: PostgresPair | undefined;
let nats: PrivateNats | undefined;
let system: RunningSystem;
let partners: Partners;
let clients: InternalClients;
let crew: { partner: Partner; blockListing: string }[] = [];
/** A fresh listing per fault (its nights start unsold). */
let bookingListing: string;

type Kind = 'block' | 'endpoint' | 'key' | 'booking';
interface Op {
  kind: Kind;
  start: number;
  end: number;
  ok: boolean;
}

/** What one traffic run acknowledged and saw. */
interface Traffic {
  ops: Op[];
  statuses: Record<string, number>;
  rpcCodes: Record<string, number>;
  /** Gateway answers ≥ 500 that were not a 503 problem document, and dropped exchanges. */
  badAnswers: string[];
  blocks: { workspaceId: string; uid: string }[];
  /** Per workspace: the highest acknowledged endpoint number and the highest attempted. */
  endpoints: Map<string, { acked: number; attempted: number }>;
  endpointAcks: number;
  keys: string[];
  bookings: { reference: string; attempt: string }[];
  bookingAttempts: number;
}

function newTraffic(): Traffic {
  return { ops: [], statuses: {}, rpcCodes: {}, badAnswers: [], blocks: [], endpoints: new Map(), endpointAcks: 0, keys: [], bookings: [], bookingAttempts: 0 };
}

const fire = (req: SentRequest): Promise<Received> =>
  send(system.gatewayUrl, req).catch((err: Error) => ({ status: 0, headers: {}, text: `no response: ${err.message}`, json: undefined }));

/** Tallies a gateway answer; true when it acknowledged the write. */
function gatewayAnswer(t: Traffic, what: string, r: Received): boolean {
  t.statuses[r.status] = (t.statuses[r.status] ?? 0) + 1;
  const problem503 = r.status === 503 && r.json?.code === 'service_unavailable' && /^application\/problem\+json/.test(String(r.headers['content-type']));
  if (r.status === 0 || (r.status >= 500 && !problem503)) t.badAnswers.push(`${what} → ${r.status} ${r.text.slice(0, 120)}`);
  return r.status >= 200 && r.status < 300;
}

function rpcOutcome(t: Traffic, err: unknown): Code {
  const code = ConnectError.from(err).code;
  t.rpcCodes[Code[code]] = (t.rpcCodes[Code[code]] ?? 0) + 1;
  return code;
}

/** Runs every writer until `until()` says stop; resolves once they all have. */
async function traffic(t: Traffic, tag: string, until: () => boolean): Promise<void> {
  const timed = async (kind: Kind, fn: () => Promise<boolean>) => {
    const start = Date.now();
    const ok = await fn();
    t.ops.push({ kind, start, end: Date.now(), ok });
    return ok;
  };
  const blockLoop = async ({ partner, blockListing }: (typeof crew)[number]) => {
    for (let i = 0; !until(); i++) {
      const uid = `${tag}-${i}`;
      const body = { listing_id: blockListing, check_in: day('2027-01-01', i % 700), check_out: day('2027-01-01', (i % 700) + 1), reason: 'maintenance' };
      await timed('block', async () => {
        const ok = gatewayAnswer(t, 'PUT /v1/blocks', await fire(jsonRequest('PUT', `/v1/blocks/${uid}`, body, partner.auth)));
        if (ok) t.blocks.push({ workspaceId: partner.workspaceId, uid });
        return ok;
      });
      await sleep(20);
    }
  };
  const endpointLoop = async ({ partner }: (typeof crew)[number]) => {
    const seen = t.endpoints.get(partner.workspaceId) ?? { acked: -1, attempted: -1 };
    t.endpoints.set(partner.workspaceId, seen);
    for (let n = seen.attempted + 1; !until(); n++) {
      seen.attempted = n;
      const body = { url: `https://localhost/psync-hook-${n}`, events: ['booking.confirmed', 'user.erased'] };
      await timed('endpoint', async () => {
        const ok = gatewayAnswer(t, 'PUT /v1/webhooks/endpoint', await fire(jsonRequest('PUT', '/v1/webhooks/endpoint', body, partner.auth)));
        if (ok) {
          seen.acked = n;
          t.endpointAcks++;
        }
        return ok;
      });
      await sleep(100);
    }
  };
  const keyLoop = async () => {
    for (let i = 0; !until(); i++) {
      const workspaceId = crew[i % crew.length]!.partner.workspaceId;
      await timed('key', async () => {
        try {
          t.keys.push((await clients.identity.issueKey({ workspaceId })).keyId);
          return true;
        } catch (err) {
          rpcOutcome(t, err);
          return false;
        }
      });
      await sleep(100);
    }
  };
  const began = Date.now();
  const bookingLoop = async (loop: number) => {
    for (let i = 0; !until(); i++) {
      const attempt = `${tag}-b${loop}-${i}-${randomUUID().slice(0, 8)}`;
      const night = Math.floor((Date.now() - began) / NIGHT_EVERY_MS) + Math.floor(Math.random() * BOOKABLE_NIGHTS);
      const req = {
        listingId: bookingListing,
        checkIn: day('2027-06-01', night),
        checkOut: day('2027-06-01', night + 1 + (i % 2)),
        guestId: attempt,
        guestName: 'Failover Guest',
        partySize: 1,
        amountPaid: { value: '100.00', currency: 'EUR' },
        requiresPayment: false,
        idempotencyKey: attempt,
      };
      t.bookingAttempts++;
      // As the marketplace does: the same request, same key, again after UNAVAILABLE.
      for (let decided = false; !decided;) {
        await timed('booking', async () => {
          try {
            const { booking } = await clients.calendar.confirmBooking(req);
            t.bookings.push({ reference: booking!.bookingReference, attempt });
            return (decided = true);
          } catch (err) {
            decided = rpcOutcome(t, err) !== Code.Unavailable; // refused: the nights are taken
            return false;
          }
        });
        // Once the run ends an undecided attempt is given up: it was never acknowledged.
        if (!decided && until()) break;
        if (!decided) await sleep(200);
      }
      await sleep(50);
    }
  };
  await Promise.all([...crew.map(blockLoop), ...crew.map(endpointLoop), keyLoop(), ...Array.from({ length: BOOKING_LOOPS }, (_, l) => bookingLoop(l))]);
}

/** For each kind of write, the first acknowledged one that started after `t0`, in seconds from `t0`. */
function recoveryByKind(t: Traffic, t0: number): Record<Kind, number> {
  const out = {} as Record<Kind, number>;
  for (const kind of ['block', 'endpoint', 'key', 'booking'] as Kind[]) {
    const first = t.ops.filter((o) => o.kind === kind && o.ok && o.start >= t0).sort((a, b) => a.end - b.end)[0];
    out[kind] = first ? (first.end - t0) / 1000 : Number.POSITIVE_INFINITY;
  }
  return out;
}

/** Checks every acknowledged write on `primary`; returns the counts for the figures. */
async function verify(t: Traffic, primary: PgNode): Promise<{ lost: number; duplicated: number; doubleSold: number; missing: string[] }> {
  const q = <T extends Record<string, unknown>>(text: string) => pair!.query<T>(primary, text);
  const missing: string[] = [];
  const blocks = new Set((await q<{ k: string }>(`select workspace_id || '/' || external_uid as k from calendar.blocks`)).map((r) => r.k));
  for (const b of t.blocks) if (!blocks.has(`${b.workspaceId}/${b.uid}`)) missing.push(`block ${b.uid}`);
  const keys = new Set((await q<{ key_id: string }>(`select key_id from identity.api_keys`)).map((r) => r.key_id));
  for (const k of t.keys) if (!keys.has(k)) missing.push(`key ${k}`);
  const urls = new Map((await q<{ w: string; url: string }>(`select workspace_id::text as w, url from notifications.endpoints`)).map((r) => [r.w, r.url]));
  for (const [w, { acked, attempted }] of t.endpoints) {
    if (acked < 0) continue;
    const n = Number(/psync-hook-(\d+)$/.exec(urls.get(w) ?? '')?.[1] ?? -1);
    // The stored endpoint is the last acknowledged one, or a later attempt whose answer was lost.
    if (n < acked || n > attempted) missing.push(`endpoint of ${w}: stored #${n}, acknowledged #${acked}`);
  }
  const bookings = await q<{ booking_reference: string; guest_id: string }>(`select booking_reference, guest_id from calendar.bookings where listing_id = '${bookingListing}'`);
  const refs = new Set(bookings.map((r) => r.booking_reference));
  for (const b of t.bookings) if (!refs.has(b.reference)) missing.push(`booking ${b.reference}`);
  const perAttempt = new Map<string, number>();
  for (const b of bookings) perAttempt.set(b.guest_id, (perAttempt.get(b.guest_id) ?? 0) + 1);
  const duplicated = [...perAttempt.values()].filter((n) => n > 1).length;
  const [sold] = await q<{ n: number }>(`
    select count(*)::int as n from (
      select b.listing_id, d from calendar.bookings b, generate_series(b.check_in, b.check_out - 1, interval '1 day') d
      where b.status = 'confirmed' group by 1, 2 having count(*) > 1) x`);
  return { lost: missing.length, duplicated, doubleSold: sold!.n, missing };
}

/**
 * Runs traffic around `fault` (which resolves with when the fault began and when the
 * promotion was asked for) and asserts the promises.
 */
async function underTraffic(
  name: string,
  tag: string,
  fault: () => Promise<{ faultAt: number; promotedAt: number }>,
  newPrimary: () => PgNode,
  more: () => Promise<Record<string, number>> = async () => ({}),
) {
  bookingListing = (await clients.catalog.createListing({ workspaceId: crew[0]!.partner.workspaceId })).listing!.listingId;
  const t = newTraffic();
  const logsBefore = system.logs().length;
  let stop = false;
  const load = traffic(t, tag, () => stop);
  const startedAt = Date.now();
  await sleep(5000);
  const before = t.ops.length;
  const { faultAt, promotedAt: t0 } = await fault();
  // Until every kind of write succeeded after the promotion, then a few seconds more.
  const deadline = t0 + (RECOVERY_LIMIT_S + 15) * 1000;
  while (Date.now() < deadline && Object.values(recoveryByKind(t, t0)).some((s) => !Number.isFinite(s))) await sleep(250);
  await sleep(5000);
  stop = true;
  await load;
  const seconds = (Date.now() - startedAt) / 1000;

  const alive = system.child.exitCode === null && system.child.signalCode === null;
  const recovery = recoveryByKind(t, t0);
  const recoverySeconds = Math.max(...Object.values(recovery));
  const checked = await verify(t, newPrimary());
  const internal = logEvents(system.logs(), 'rpc.failure.internal');
  const unexpectedRpc = Object.entries(t.rpcCodes).filter(([code]) => !['Unavailable', 'FailedPrecondition', 'AlreadyExists', 'Aborted'].includes(code));
  const writes = t.ops.filter((o) => o.ok).length;
  recordFigures({
    fault: name,
    load: `${PARTNERS} partners: block pushes and endpoint registrations through the gateway, API keys (identity RPC), ${BOOKING_LOOPS} marketplace booking loops contending for ${BOOKABLE_NIGHTS} nights at a time; ${(writes / seconds).toFixed(0)} acknowledged writes/s over ${seconds.toFixed(0)} s`,
    lost: checked.lost,
    duplicated: checked.duplicated,
    doubleSold: checked.doubleSold,
    statuses: t.statuses,
    recoverySeconds: Number(recoverySeconds.toFixed(2)),
    extra: {
      acknowledged_blocks: t.blocks.length,
      acknowledged_endpoints: t.endpointAcks,
      acknowledged_keys: t.keys.length,
      acknowledged_bookings: t.bookings.length,
      booking_attempts: t.bookingAttempts,
      rpc_failures: Object.entries(t.rpcCodes)
        .map(([c, n]) => `${c} ${n}`)
        .join(', '),
      first_write_after_promotion_s: Number(Math.min(...Object.values(recovery)).toFixed(2)),
      fault_to_promotion_s: Number(((t0 - faultAt) / 1000).toFixed(2)),
      slowest_acknowledged_write_s: Number((Math.max(...t.ops.filter((o) => o.ok).map((o) => o.end - o.start)) / 1000).toFixed(2)),
      ...Object.fromEntries(Object.entries(recovery).map(([k, s]) => [`recovery_${k}_s`, Number(s.toFixed(2))])),
      ops_before_fault: before,
      ...(await more()),
    },
  });

  // The system's warnings and errors during this fault, beside the figures, for a failure's post-mortem.
  mkdirSync(FIGURES_DIR, { recursive: true });
  const warnings = system
    .logs()
    .slice(logsBefore)
    .filter((l) => /"level":"(warn|error|fatal)"/.test(l));
  writeFileSync(join(FIGURES_DIR, `${name}.system.log`), `${warnings.join('\n')}\n`);
  if (!alive) {
    const errors = system.logs().filter((l) => /"level":"(error|fatal)"/.test(l));
    throw new Error(`the system process died during the fault:\n${[...errors.slice(-5), ...system.stderr().slice(-20)].join('\n')}`);
  }
  expect(checked.missing).toEqual([]);
  expect(checked.duplicated).toBe(0);
  expect(checked.doubleSold).toBe(0);
  expect(t.badAnswers).toEqual([]);
  expect(non503Errors(t.statuses)).toBe(0);
  expect(internal.map((l) => ({ rpc: l.rpc, err: l.err }))).toEqual([]);
  expect(unexpectedRpc).toEqual([]);
  expect(recoverySeconds).toBeLessThanOrEqual(RECOVERY_LIMIT_S);
  // Writes were flowing before the fault and were acknowledged after it.
  expect(before).toBeGreaterThan(10);
  expect(t.blocks.length).toBeGreaterThan(0);
  expect(t.bookings.length).toBeGreaterThan(0);
}

describeWithPair('PostgreSQL failover under traffic (primary + synchronous standby, multi-host DATABASE_URL)', () => {
  beforeAll(async () => {
    pair = await startPostgresPair();
    const prefix = uniqueBusPrefix();
    nats = hasNatsServer() ? await startPrivateNats(prefix) : undefined;
    system = await startSystem({
      env: {
        DATABASE_URL: pair.url,
        NATS_URL: nats ? nats.urlFor('psync') : '',
        BUS_PREFIX: prefix,
        RATE_LIMIT_PER_HOUR: '1000000',
        TOKEN_RATE_LIMIT_PER_HOUR: '1000000',
        EGRESS_ALLOW_CIDRS: '127.0.0.0/8',
        METRICS_PORT: '0',
        WEBHOOK_RETRY_SCHEDULE: '1,1,1',
      },
      timeoutMs: 180_000,
    });
    partners = new Partners(system);
    clients = internalClients(system.internalUrl, 30_000);
    crew = [];
    for (let i = 0; i < PARTNERS; i++) {
      const partner = await partners.partner('sandbox');
      crew.push({ partner, blockListing: (await clients.catalog.createListing({ workspaceId: partner.workspaceId })).listing!.listingId });
    }
  }, 300_000);

  afterAll(async () => {
    partners?.close();
    clients?.close();
    await stopAllSystems();
    await nats?.stop();
    await pair?.destroy();
  });

  test('the system connects through the multi-host URL to the read-write host', async () => {
    const line = firstLogEvent(system.logs(), 'database.opened');
    expect(line).toMatchObject({ host: '127.0.0.1,127.0.0.1', target_session_attrs: 'read-write' });
    const [a] = pair!.nodes;
    const rows = await pair!.query<{ n: number }>(a, `select count(*)::int as n from pg_stat_activity where application_name like 'psync-%'`);
    expect(rows[0]!.n).toBeGreaterThan(0);
  });

  test('postgres-failover: the primary crashes under traffic, the standby is promoted', async () => {
    const [a, b] = pair!.nodes;
    await underTraffic(
      'postgres-failover',
      'fo',
      async () => {
        const faultAt = Date.now();
        await pair!.crash(a);
        // The time a failover manager takes to decide, compressed.
        await sleep(1000);
        const promotedAt = Date.now();
        await pair!.promote(b);
        return { faultAt, promotedAt };
      },
      () => b,
    );
  });

  test('postgres-demoted-primary: the serving primary turns read-only under open connections, the other host is promoted', async () => {
    const [a, b] = pair!.nodes;
    await pair!.rebuildAsStandby(a, b);
    await underTraffic(
      'postgres-demoted-primary',
      'dm',
      async () => {
        const faultAt = Date.now();
        await pair!.makeReadOnly(b);
        await sleep(1000);
        const promotedAt = Date.now();
        await pair!.promote(a);
        return { faultAt, promotedAt };
      },
      () => a,
      async () => {
        // Writers have left the demoted server; an idle pooled connection that has not run a query since stays until its idle time-out.
        const rows = await pair!.query<{ n: number }>(b, `select count(*)::int as n from pg_stat_activity where application_name like 'psync-%'`);
        return { connections_left_on_demoted_server: rows[0]!.n };
      },
    );
  });
});
