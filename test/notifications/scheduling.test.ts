/**
 * The dispatcher's scheduling against the real database (PostgreSQL with DATABASE_URL,
 * embedded PGlite otherwise), with a poster the test controls instead of the network
 * (docs/notifications.md, "Scheduling and isolation"):
 *
 * - isolation: endpoints that never answer, more of them than the old global pool could
 *   hold (12 × 8 attempts > 64), and each with an older backlog, do not hold up healthy
 *   endpoints' deliveries; a silent endpoint never has more than PER_ENDPOINT_CONCURRENCY
 *   attempts open, and one at a time once they fail;
 * - the breaker: a failing endpoint is attempted BREAKER_THRESHOLD times (plus probes),
 *   not once per delivery per retry; its other deliveries wait uncounted; once it answers
 *   2xx again every one is delivered, each booking's deliveries in order;
 * - Retry-After: no attempt to that endpoint before the time asked;
 * - 410 Gone suspends the endpoint;
 * - the end of an attempt runs another claim only when the claim before could leave
 *   work that a freed slot lets start: none after a lone delivery, yet a delivery held
 *   back by its endpoint's room or by its booking's order goes out as soon as the
 *   attempt ahead of it ends, not at the next idle poll.
 *
 * Assertions are on orderings and counts, never on how fast a loaded machine runs.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { runMigrations } from '../../services/kit/db';
import { KIT_MIGRATIONS } from '../../services/kit/db';
import { BREAKER_THRESHOLD } from '../../services/notifications/endpoint-health';
import { DeliveryDispatcher } from '../../services/notifications/dispatcher';
import { PER_ENDPOINT_CONCURRENCY } from '../../services/notifications/delivery-limits';
import { notificationsModule } from '../../services/notifications/module';
import { mintSigningSecret, SecretBox } from '../../services/notifications/secret-box';
import type { PostResult, WebhookPoster } from '../../services/notifications/webhook-poster';
import { testLogger } from '../support/bus';
import { startTestDatabase, type TestDatabase } from '../support/database';
import { eventually } from './support/harness';
import { holdsFor } from '../support/eventually';

jest.setTimeout(120_000);

let db: TestDatabase;
const box = new SecretBox(randomBytes(32));

beforeAll(async () => {
  db = await startTestDatabase();
  await runMigrations(db.sql, { schema: 'notifications', sources: [KIT_MIGRATIONS, notificationsModule.migrations] });
}, 120_000);
afterAll(async () => db?.stop());

/** One POST the dispatcher made, as the fake network saw it. */
interface Call {
  ws: string;
  eventId: string;
  ref: string | null;
  kind: string;
  at: number;
  /** Set once answered. */
  endedAt?: number;
}

type Behaviour = (call: Call, signal: AbortSignal | undefined) => Promise<PostResult>;

const ok: Behaviour = async () => ({ status: 200, body: Buffer.alloc(0) });
const status =
  (s: number, retryAfter?: string): Behaviour =>
  async () => ({ status: s, body: Buffer.alloc(0), ...(retryAfter ? { retryAfter } : {}) });
/** Never answers; released (as a time-out) only when the test says so, or on abort. */
function silent(): { behaviour: Behaviour; release: () => void } {
  const waiting = new Set<() => void>();
  return {
    behaviour: (_c, signal) =>
      new Promise<PostResult>((resolve) => {
        const done = () => {
          waiting.delete(done);
          resolve({ error: signal?.aborted ? 'aborted' : 'timeout' });
        };
        waiting.add(done);
        signal?.addEventListener('abort', done, { once: true });
      }),
    release: () => [...waiting].forEach((d) => d()),
  };
}

/** A fake network: per-endpoint behaviour, every call recorded, in-flight counts tracked. */
class FakeNetwork implements WebhookPoster {
  readonly calls: Call[] = [];
  readonly behaviours = new Map<string, Behaviour>();
  readonly inFlight = new Map<string, number>();
  readonly maxInFlight = new Map<string, number>();

  async vet(): Promise<boolean> {
    return true;
  }
  close(): number {
    return 0;
  }
  async post(url: string, body: string, _h: Record<string, string>, o: { signal?: AbortSignal }): Promise<PostResult> {
    const ws = url.split('/').at(-1)!;
    const json = JSON.parse(body);
    const call: Call = { ws, eventId: json.event_id, ref: json.data.booking_reference ?? null, kind: json.event_type, at: Date.now() };
    this.calls.push(call);
    const n = (this.inFlight.get(ws) ?? 0) + 1;
    this.inFlight.set(ws, n);
    this.maxInFlight.set(ws, Math.max(n, this.maxInFlight.get(ws) ?? 0));
    try {
      return await (this.behaviours.get(ws) ?? ok)(call, o.signal);
    } finally {
      call.endedAt = Date.now();
      this.inFlight.set(ws, this.inFlight.get(ws)! - 1);
    }
  }
  to(ws: string): Call[] {
    return this.calls.filter((c) => c.ws === ws);
  }
}

async function endpoint(ws = randomUUID()): Promise<string> {
  await db.sql`
    insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext, secret_shown)
    values (${ws}, ${`https://partner.example/${ws}`}, ${db.sql.array(['booking.confirmed', 'booking.cancelled', 'user.erased'])}, 'active',
            ${box.seal(mintSigningSecret(), ws)}, true)`;
  return ws;
}

/** Queues `n` deliveries for `ws` (created `ageS` seconds ago, due now); returns their event ids. */
async function queue(ws: string, n: number, opts: { ageS?: number; kind?: string; ref?: (i: number) => string } = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    const ref = opts.ref?.(i) ?? `BK-${randomUUID().slice(0, 8)}`;
    const kind = opts.kind ?? 'booking.confirmed';
    const body = JSON.stringify({ event_id: id, event_type: kind, occurred_at: new Date().toISOString(), data: { booking_reference: ref } });
    await db.sql`
      insert into notifications.deliveries (workspace_id, event_id, event_type, occurred_at, booking_reference, body, state, next_attempt_at, created_at)
      values (${ws}, ${id}, ${kind}, now() - ${opts.ageS ?? 0}::float8 * interval '1 second' + ${i}::float8 * interval '1 millisecond', ${ref}, ${body}, 'pending',
              now() - ${opts.ageS ?? 0}::float8 * interval '1 second', now() - ${opts.ageS ?? 0}::float8 * interval '1 second')`;
    ids.push(id);
  }
  return ids;
}

async function states(ws: string): Promise<Record<string, number>> {
  const rows = await db.sql<{ state: string; n: number }[]>`
    select state, count(*)::int as n from notifications.deliveries where workspace_id = ${ws} group by state`;
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

function dispatcher(net: FakeNetwork, schedule: number[], pollMs = 50): DeliveryDispatcher {
  return new DeliveryDispatcher({ sql: db.sql, asyncCommitSql: db.sql, log: testLogger(), box, poster: net, schedule, soleWorker: true, pollMs });
}

test('endpoints that never answer (12 × 8 attempts, each with an older backlog) do not hold up healthy ones', async () => {
  const net = new FakeNetwork();
  const hang = silent();
  const silentEps: string[] = [];
  for (let i = 0; i < 12; i++) {
    const ws = await endpoint();
    net.behaviours.set(ws, hang.behaviour);
    await queue(ws, 30, { ageS: 60 }); // a backlog older than every healthy delivery
    silentEps.push(ws);
  }
  const healthy: string[] = [];
  for (let i = 0; i < 6; i++) healthy.push(await endpoint());
  // Breaker interval 1 s, doubling, capped at 60 s.
  const d = dispatcher(net, [1, 60]);
  await d.start();
  try {
    // The silent endpoints take their slots first (their backlog is older)…
    await eventually(async () => silentEps.every((ws) => net.to(ws).length === PER_ENDPOINT_CONCURRENCY), 30_000, 'silent endpoints saturated');
    // …then fresh events of healthy endpoints still go out, while not one silent attempt has ended.
    for (const ws of healthy) await queue(ws, 10);
    await eventually(
      async () => {
        for (const ws of healthy) if ((await states(ws)).delivered !== 10) return false;
        return true;
      },
      30_000,
      'every healthy delivery delivered',
    );
    expect(net.calls.filter((c) => silentEps.includes(c.ws) && c.endedAt !== undefined)).toHaveLength(0);
    for (const ws of silentEps) expect(net.maxInFlight.get(ws)).toBeLessThanOrEqual(PER_ENDPOINT_CONCURRENCY);

    // Once their attempts fail, a silent endpoint gets one attempt at a time (then its breaker opens).
    hang.release();
    await eventually(async () => silentEps.every((ws) => net.to(ws).length > PER_ENDPOINT_CONCURRENCY) || null, 30_000, 'the next attempts');
    hang.release();
    const before = net.calls.length;
    await eventually(async () => net.calls.length > before || null, 30_000, 'more attempts').catch(() => undefined);
    for (const ws of silentEps) {
      const after = net.to(ws).slice(PER_ENDPOINT_CONCURRENCY);
      // Every attempt after the first round started only once the previous one had ended.
      for (let i = 1; i < after.length; i++) expect(after[i]!.at).toBeGreaterThanOrEqual(after[i - 1]!.endedAt ?? Infinity);
    }
  } finally {
    hang.release();
    await d.stop(1000);
    hang.release();
  }
});

test('a failing endpoint: the breaker bounds its attempts; its deliveries wait uncounted; all delivered in booking order once it recovers', async () => {
  const net = new FakeNetwork();
  const ws = await endpoint();
  const other = await endpoint();
  net.behaviours.set(ws, status(500));
  // 20 bookings, each confirmed then cancelled: 40 deliveries.
  const refs = Array.from({ length: 20 }, (_, i) => `BK-ORDER-${i}-${randomUUID().slice(0, 4)}`);
  await queue(ws, 20, { ref: (i) => refs[i]! });
  await queue(ws, 20, { ref: (i) => refs[i]!, kind: 'booking.cancelled' });
  // A long schedule (span 200 s) so that nothing is abandoned during the test; breaker interval 1 s.
  const d = dispatcher(net, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 181]);
  await d.start();
  try {
    const [opened] = await eventually(
      async () => {
        const r = await db.sql<{ breaker: string }[]>`select breaker from notifications.endpoint_health where workspace_id = ${ws} and breaker <> 'closed'`;
        return r.length > 0 && r;
      },
      30_000,
      'breaker open',
    );
    expect(opened).toBeDefined();
    // Without the breaker each of the 40 deliveries would be attempted every second.
    const t0 = Date.now();
    await queue(other, 5);
    await eventually(async () => (await states(other)).delivered === 5, 30_000, 'another endpoint unaffected');
    // timing under test: the breaker's probes are counted over real seconds of its schedule.
    await new Promise((r) => setTimeout(r, 3000));
    const elapsedS = (Date.now() - t0) / 1000 + 5;
    const attempts = net.to(ws).length;
    // Threshold + a few concurrent + about one probe per second; generous.
    expect(attempts).toBeLessThanOrEqual(BREAKER_THRESHOLD + PER_ENDPOINT_CONCURRENCY + 3 * elapsedS);
    expect(attempts).toBeLessThan(40);
    // Most deliveries were never attempted: they wait without spending their retries.
    const [waiting] = await db.sql<{ untouched: number }[]>`
      select count(*)::int as untouched from notifications.deliveries where workspace_id = ${ws} and state = 'pending' and attempts = 0`;
    expect(Number(waiting!.untouched)).toBeGreaterThan(20);
    // No cancellation went out before its booking's confirmation was delivered (none was).
    expect(net.to(ws).filter((c) => c.kind === 'booking.cancelled')).toHaveLength(0);

    net.behaviours.set(ws, ok);
    await eventually(async () => (await states(ws)).delivered === 40, 60_000, 'everything delivered after recovery');
    const health = await db.sql`select breaker, consecutive_failures from notifications.endpoint_health where workspace_id = ${ws}`;
    expect(health[0]).toMatchObject({ breaker: 'closed', consecutive_failures: 0 });
    // Per booking: the confirmation's delivering attempt ended before the cancellation was sent.
    const calls = net.to(ws);
    for (const ref of refs) {
      const confirmedOk = calls.filter((c) => c.ref === ref && c.kind === 'booking.confirmed').at(-1)!;
      const cancelled = calls.filter((c) => c.ref === ref && c.kind === 'booking.cancelled');
      expect(cancelled.length).toBeGreaterThan(0);
      for (const c of cancelled) expect(c.at).toBeGreaterThanOrEqual(confirmedOk.endedAt!);
    }
    expect(await states(ws)).toEqual({ delivered: 40 });
  } finally {
    await d.stop(1000);
  }
});

test('Retry-After: no attempt to the endpoint before the time asked; delivered afterwards', async () => {
  const net = new FakeNetwork();
  const ws = await endpoint();
  let first = true;
  net.behaviours.set(ws, async () => {
    if (first) {
      first = false;
      return { status: 429, body: Buffer.alloc(0), retryAfter: '3' };
    }
    return { status: 200, body: Buffer.alloc(0) };
  });
  await queue(ws, 1);
  const d = dispatcher(net, [1, 1, 1]);
  await d.start();
  try {
    await eventually(async () => net.to(ws)[0]?.endedAt, 30_000, 'the 429');
    await queue(ws, 3);
    await eventually(async () => (await states(ws)).delivered === 4, 30_000, 'delivered after the wait');
    const calls = net.to(ws);
    const throttled = calls[0]!;
    // Every later attempt started at least 3 s after the 429 arrived (the hold is a lower bound).
    for (const c of calls.slice(1)) expect(c.at - throttled.endedAt!).toBeGreaterThanOrEqual(2900);
    // The throttled delivery was retried after Retry-After (3 s), not after the schedule's 1 s.
    const [row] = await db.sql`select attempts from notifications.deliveries where workspace_id = ${ws} and event_id = ${throttled.eventId}`;
    expect(row).toMatchObject({ attempts: 2 });
  } finally {
    await d.stop(1000);
  }
});

test('410 Gone suspends the endpoint at once', async () => {
  const net = new FakeNetwork();
  const ws = await endpoint();
  net.behaviours.set(ws, status(410));
  await queue(ws, 1);
  const d = dispatcher(net, [1, 1, 1]);
  await d.start();
  try {
    await eventually(
      async () => {
        const [e] = await db.sql<{ status: string }[]>`select status from notifications.endpoints where workspace_id = ${ws}`;
        return e!.status === 'suspended';
      },
      30_000,
      'suspended',
    );
    expect(net.to(ws)).toHaveLength(1);
  } finally {
    await d.stop(1000);
  }
});

describe('claims when an attempt ends (the idle poll is a minute: only nudges claim)', () => {
  const IDLE_POLL_MS = 60_000;
  let claims: jest.SpyInstance;
  beforeEach(async () => {
    claims = jest.spyOn(DeliveryDispatcher.prototype as unknown as { claimAndSend: (fast: number, slow: number) => Promise<unknown> }, 'claimAndSend');
    // Earlier tests' endpoints (silent, failing) keep pending deliveries: out of the way.
    await db.sql`
      update notifications.deliveries set state = 'abandoned', next_attempt_at = null, lease_owner = null, lease_until = null, finished_at = now()
      where state = 'pending'`;
  });
  afterEach(() => claims.mockRestore());

  /** Each call waits until the test answers it (200). */
  function gated(): { behaviour: Behaviour; waiting: () => number; answerOne: () => void; answerAll: () => void } {
    const queue: (() => void)[] = [];
    return {
      behaviour: () => new Promise<PostResult>((resolve) => queue.push(() => resolve({ status: 200, body: Buffer.alloc(0) }))),
      waiting: () => queue.length,
      answerOne: () => queue.shift()?.(),
      answerAll: () => queue.splice(0).forEach((a) => a()),
    };
  }

  test('a lone delivery: one claim sends it; its end claims nothing more', async () => {
    const net = new FakeNetwork();
    const ws = await endpoint();
    const d = dispatcher(net, [1, 1], IDLE_POLL_MS);
    await d.start();
    try {
      await eventually(async () => claims.mock.calls.length === 1, 10_000, 'the first claim');
      for (let i = 1; i <= 3; i++) {
        await queue(ws, 1);
        d.nudge(); // as the intake does
        await eventually(async () => (await states(ws)).delivered === i, 10_000, `delivery ${i}`);
        await new Promise((r) => setTimeout(r, 300));
        // The nudge's claim took the delivery; the end of its attempt ran no claim.
        expect(claims.mock.calls.length).toBe(1 + i);
      }
    } finally {
      await d.stop(1000);
    }
  });

  test("a delivery held back by its endpoint's room goes out when an attempt there ends, not at the idle poll", async () => {
    const net = new FakeNetwork();
    const ws = await endpoint();
    const gate = gated();
    net.behaviours.set(ws, gate.behaviour);
    const ids = await queue(ws, PER_ENDPOINT_CONCURRENCY + 2);
    const d = dispatcher(net, [1, 1], IDLE_POLL_MS);
    await d.start();
    try {
      await eventually(async () => gate.waiting() === PER_ENDPOINT_CONCURRENCY || null, 10_000, 'the room used');
      await holdsFor("no attempt beyond the endpoint's room", () => net.to(ws).length === PER_ENDPOINT_CONCURRENCY, 200);
      gate.answerOne();
      await eventually(async () => net.to(ws).length === PER_ENDPOINT_CONCURRENCY + 1, 10_000, 'the ninth sent as a slot freed');
      gate.answerOne();
      await eventually(async () => net.to(ws).length === PER_ENDPOINT_CONCURRENCY + 2, 10_000, 'the tenth sent as a slot freed');
      gate.answerAll();
      await eventually(async () => (await states(ws)).delivered === ids.length, 10_000, 'all delivered');
      expect(net.to(ws).map((c) => c.eventId)).toEqual(ids);
    } finally {
      gate.answerAll();
      await d.stop(1000);
    }
  });

  test("a booking's later delivery goes out as soon as the one ahead ends, queued while it is in flight or together with it", async () => {
    const net = new FakeNetwork();
    const ws = await endpoint();
    const gate = gated();
    net.behaviours.set(ws, gate.behaviour);
    const d = dispatcher(net, [1, 1], IDLE_POLL_MS);
    await d.start();
    try {
      // Queued while the one ahead is in flight: the nudged claim skips it.
      const first = `BK-BEHIND-${randomUUID().slice(0, 8)}`;
      const [confirmed] = await queue(ws, 1, { ref: () => first });
      d.nudge();
      await eventually(async () => gate.waiting() === 1 || null, 10_000, 'the confirmation sent');
      const claimed = claims.mock.calls.length;
      const [cancelled] = await queue(ws, 1, { ref: () => first, kind: 'booking.cancelled' });
      d.nudge();
      await eventually(async () => claims.mock.calls.length > claimed || null, 10_000, 'the nudged claim');
      await holdsFor('the cancellation waits behind its confirmation', () => net.to(ws).length === 1, 200);
      expect(net.to(ws).map((c) => c.eventId)).toEqual([confirmed]);
      gate.answerOne();
      await eventually(async () => gate.waiting() === 1 || null, 10_000, 'the cancellation sent as the confirmation ended');
      gate.answerOne();
      await eventually(async () => (await states(ws)).delivered === 2, 10_000, 'both delivered');

      // Queued together, nothing in flight: the claim takes the first, the second waits behind it.
      const second = `BK-BEHIND-${randomUUID().slice(0, 8)}`;
      const [confirmed2, cancelled2] = [...(await queue(ws, 1, { ref: () => second })), ...(await queue(ws, 1, { ref: () => second, kind: 'booking.cancelled' }))];
      d.nudge();
      await eventually(async () => gate.waiting() === 1 || null, 10_000, 'the second confirmation sent');
      await holdsFor('the second cancellation waits behind its confirmation', () => net.to(ws).length === 3, 200);
      gate.answerOne();
      await eventually(async () => gate.waiting() === 1 || null, 10_000, 'the second cancellation sent as its confirmation ended');
      gate.answerOne();
      await eventually(async () => (await states(ws)).delivered === 4, 10_000, 'all delivered');
      expect(net.to(ws).map((c) => c.eventId)).toEqual([confirmed, cancelled, confirmed2, cancelled2]);
    } finally {
      gate.answerAll();
      await d.stop(1000);
    }
  });
});
