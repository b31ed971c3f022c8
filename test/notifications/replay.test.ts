/**
 * `psync deliveries replay` (docs/notifications.md "Replay"): abandoned
 * deliveries re-queued through the CLI reach a real HTTPS partner receiver with the same
 * event_id and byte-identical body, freshly signed; delivered and pending deliveries are
 * left alone; another workspace's deliveries are invisible and untouched; a suspended
 * endpoint stays suspended and gets nothing until it is registered again; a guest erased
 * after the abandonment is not in the replayed body; an abandoned delivery without a body
 * is not replayable; usage errors.
 *
 * WEBHOOK_RETRY_SCHEDULE=1,1,1 (the harness default): four attempts over ~3 s, then
 * abandoned. Events come from the calendar's RPCs (or the bus), as in deliveries.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { DeliveryState, EndpointStatus, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { createSql } from '../../services/kit/db';
import { scrubGuestName } from '../../services/notifications/envelope';
import { backends, jsonLogs, linesOf, logEvents } from '../support/system';
import { errorShape, eventually, holdsFor, psync, psyncFails, rpcError, type EventDriver } from './support/harness';
import { echoAndAccept, echoThen, verifyDelivery, type Handler, type Received } from './support/receiver';
import { webhookSuite } from './support/suite';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
/** Longer than the whole 1,1,1 schedule: time for anything that was going to be sent. */
const QUIET_MS = 4500;

const suite = webhookSuite('notifications replay');
const withEvents = (name: string, fn: (d: EventDriver) => Promise<void>, timeout = 90_000) => suite.withEvents(name, fn, timeout);
/** `withEvents` for a test that edits the system's database directly: a real PostgreSQL only (the embedded one has a single session, the system's). */
const withEventsOnPostgres: typeof withEvents = process.env.DATABASE_URL
  ? withEvents
  : (name) => test.skip(`${name} (needs DATABASE_URL: it edits the system's database directly; skipped on the embedded default)`, () => undefined);

/** A sandbox workspace whose endpoint (its own receiver path) answers deliveries with `handler`. */
async function partnerAnswering(d: EventDriver, handler: Handler) {
  const ws = await d.newWorkspace();
  const path = `/replay/${ws}`;
  suite.receiver.on(path, handler);
  const url = `${suite.receiver.baseUrl}${path}`;
  const res = await suite.clients.notifications.putEndpoint({ workspaceId: ws, url, events: ALL });
  expect(res.status).toBe(EndpointStatus.ACTIVE);
  return { ws, path, url, secret: res.signingSecret! };
}

/** Deliveries received on `path` with this event_id (every attempt, replays included). */
const sentFor = (path: string, eventId: string): Received[] => suite.receiver.at(path, 'delivery').filter((r) => r.json?.event_id === eventId);

/** The booking.confirmed requests received on `path` for `guestName`. */
const confirmationsOf = (path: string, guestName: string | null): Received[] =>
  suite.receiver.at(path, 'delivery').filter((r) => r.json?.event_type === 'booking.confirmed' && r.json.data.guest_name === guestName);

async function list(ws: string, state?: DeliveryState) {
  return (await suite.clients.notifications.listDeliveries({ workspaceId: ws, state })).items;
}

/** Waits until `ws` has `n` abandoned deliveries; returns them (newest first). */
const abandonedCount = (ws: string, n: number) =>
  eventually(
    async () => {
      const l = await list(ws, DeliveryState.ABANDONED);
      return l.length === n && l;
    },
    20_000,
    `${n} abandoned deliveries`,
  );

const replayLines = (eventId: string) => logEvents(suite.system.logs(), 'webhook.delivery.replayed').filter((l) => l.event_id === eventId);

describe(`psync deliveries replay (${backends.database} + ${backends.bus})`, () => {
  withEvents('an abandoned delivery is replayed: the same event_id and body arrive, freshly signed, and are delivered', async (d) => {
    let healed = false;
    const p = await partnerAnswering(d, (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: healed ? 200 : 500 }));
    await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Ada Lovelace' });
    const [abandoned] = await abandonedCount(p.ws, 1);
    const eventId = abandoned!.eventId;
    const failed = sentFor(p.path, eventId);
    expect(failed).toHaveLength(4);
    expect(abandoned).toMatchObject({ attempts: 4, lastStatus: 500 });

    healed = true;
    const before = Date.now();
    const out = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--event', eventId]);
    expect(out).toEqual({
      replayed: 1,
      items: [{ event_id: eventId, event_type: 'booking.confirmed', state: 'pending', attempts: 0, last_status: null, next_attempt_at: expect.any(String) }],
      not_replayable: 0,
      endpoint_status: 'active',
    });
    expect(Date.parse(out.items[0].next_attempt_at)).toBeGreaterThanOrEqual(before - 5000);

    const replayed = await suite.receiver.waitFor(() => sentFor(p.path, eventId).length === 5 && sentFor(p.path, eventId)[4], 10_000, 'the replayed attempt');
    expect(replayed.raw).toBe(failed[0]!.raw); // byte for byte the body the partner missed
    expect(replayed.json.data.guest_name).toBe('Ada Lovelace');
    expect(verifyDelivery(replayed, p.secret)).toEqual({ ok: true, matched: 'signature' });
    expect(Number(replayed.headers['x-signature-timestamp'])).toBeGreaterThanOrEqual(Math.floor(before / 1000));

    const [delivered] = await eventually(
      async () => {
        const l = await list(p.ws, DeliveryState.DELIVERED);
        return l.length === 1 && l;
      },
      10_000,
      'delivered',
    );
    expect(delivered).toMatchObject({ eventId, attempts: 1, lastStatus: 200, occurredAt: abandoned!.occurredAt });
    expect(delivered!.lastError).toBeUndefined();
    // Queued again at the replay: the backlog-age gauge measures from there.
    expect(Number(delivered!.createdAt!.seconds)).toBeGreaterThan(Number(abandoned!.createdAt!.seconds));

    // One log line for the replay, naming workspace and event; no secret in any line.
    expect(replayLines(eventId)).toEqual([expect.objectContaining({ level: 'info', workspace_id: p.ws, event_type: 'booking.confirmed', endpoint_status: 'active' })]);
    expect(suite.system.logs().some((l) => l.includes(p.secret))).toBe(false); // log text on purpose: no secret anywhere in it

    // Delivered now: a second replay leaves it alone and counts nothing.
    expect(await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--event', eventId])).toEqual({
      replayed: 0,
      items: [],
      not_replayable: 0,
      endpoint_status: 'active',
    });
    await holdsFor('a delivered event is not replayed again', () => sentFor(p.path, eventId).length === 5, 1500);
  });

  withEvents(
    '--all-abandoned re-queues only the abandoned ones, oldest first; a delivered and an in-flight pending one are left alone',
    async (d) => {
      let healed = false;
      let hung = false;
      const p = await partnerAnswering(d, (r) => {
        if (r.json?.event_type === 'endpoint.challenge') return echoAndAccept(r);
        if (r.json?.data?.guest_name === 'Fails') return { status: healed ? 200 : 503 };
        if (r.json?.data?.guest_name === 'Hangs' && !hung) {
          hung = true;
          return { status: 200, hang: true }; // the attempt stays in flight (leased) for ATTEMPT_TIMEOUT_MS
        }
        return { status: 200 };
      });
      await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Fails' });
      await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Fails' });
      const abandoned = await abandonedCount(p.ws, 2);
      await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Accepted' });
      await eventually(async () => (await list(p.ws, DeliveryState.DELIVERED)).length === 1, 10_000, 'one delivered');
      await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Hangs' });
      await suite.receiver.waitFor(() => confirmationsOf(p.path, 'Hangs').length === 1, 10_000, 'the hanging attempt');
      const [pendingBefore] = await list(p.ws, DeliveryState.PENDING);
      const [deliveredBefore] = await list(p.ws, DeliveryState.DELIVERED);

      healed = true;
      const out = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--all-abandoned']);
      const oldestFirst = [...abandoned].reverse().map((a) => a.eventId);
      expect(out.replayed).toBe(2);
      expect(out.items.map((i: { event_id: string }) => i.event_id)).toEqual(oldestFirst);
      for (const i of out.items) expect(i).toMatchObject({ state: 'pending', attempts: 0, last_status: null });
      expect(out).toMatchObject({ not_replayable: 0, endpoint_status: 'active' });

      // Untouched by the replay: the delivered one, and the pending one with its attempt in flight.
      expect(out.items.map((i: { event_id: string }) => i.event_id)).not.toContain(pendingBefore!.eventId);
      expect(await list(p.ws, DeliveryState.DELIVERED)).toContainEqual(deliveredBefore);

      await eventually(async () => (await list(p.ws, DeliveryState.DELIVERED)).length === 4, 30_000, 'everything delivered');
      for (const id of oldestFirst) {
        const sent = sentFor(p.path, id);
        expect(sent).toHaveLength(5); // four failed attempts, then the replay
        expect(new Set(sent.map((s) => s.raw)).size).toBe(1);
        expect(verifyDelivery(sent[4]!, p.secret).ok).toBe(true);
        expect(replayLines(id)).toHaveLength(1);
      }
      expect(confirmationsOf(p.path, 'Accepted')).toHaveLength(1);
      // The in-flight one was never replayed: its own retry delivered it (attempt 2).
      expect((await list(p.ws)).find((i) => i.eventId === pendingBefore!.eventId)).toMatchObject({ state: DeliveryState.DELIVERED, attempts: 2 });
      expect(replayLines(pendingBefore!.eventId)).toHaveLength(0);
    },
    120_000,
  );

  withEvents("tenant isolation: another workspace's deliveries are invisible and untouched", async (d) => {
    const mine = await partnerAnswering(d, echoThen(500));
    const theirs = await partnerAnswering(d, echoThen(500));
    await d.confirmBooking(mine.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Mine' });
    await d.confirmBooking(theirs.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Theirs' });
    const [myAbandoned] = await abandonedCount(mine.ws, 1);
    const [theirAbandoned] = await abandonedCount(theirs.ws, 1);
    suite.receiver.on(mine.path, echoAndAccept);
    suite.receiver.on(theirs.path, echoAndAccept);

    // Their event_id under my workspace: the same NotFound as an unknown one.
    const foreign = await psyncFails(suite.system, ['deliveries', 'replay', '--workspace', mine.ws, '--event', theirAbandoned!.eventId]);
    const unknown = await psyncFails(suite.system, ['deliveries', 'replay', '--workspace', mine.ws, '--event', randomUUID()]);
    for (const r of [foreign, unknown]) {
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
      expect(linesOf(r.stderr)).toEqual(['psync: not found: no delivery with that event_id in this workspace']);
    }
    const rpc = errorShape(await rpcError(suite.clients.notifications.replayDeliveries({ workspaceId: mine.ws, selection: { case: 'eventId', value: theirAbandoned!.eventId } })));
    expect(rpc.code).toBe('NotFound');

    const out = await psync(suite.system, ['deliveries', 'replay', '--workspace', mine.ws, '--all-abandoned']);
    expect(out.items.map((i: { event_id: string }) => i.event_id)).toEqual([myAbandoned!.eventId]);
    await suite.receiver.waitFor(() => sentFor(mine.path, myAbandoned!.eventId).length === 5, 10_000, 'my replay');
    await holdsFor("the other workspace's abandoned delivery is left alone", () => sentFor(theirs.path, theirAbandoned!.eventId).length === 4, 1500);
    expect(await list(theirs.ws)).toEqual([theirAbandoned]);
    expect(replayLines(theirAbandoned!.eventId)).toHaveLength(0);
  });

  withEvents(
    'a suspended endpoint stays suspended: replayed deliveries send nothing, and are sent after an echoed registration and a replay',
    async (d) => {
      const p = await partnerAnswering(d, echoThen(500));
      for (let i = 0; i < 5; i++) await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: `Suspender ${i}` });
      await eventually(async () => (await suite.clients.notifications.getEndpoint({ workspaceId: p.ws })).endpoint!.status === EndpointStatus.SUSPENDED, 30_000, 'suspended');
      const abandoned = await abandonedCount(p.ws, 5);
      const ids = abandoned.map((a) => a.eventId);
      suite.receiver.on(p.path, echoAndAccept); // the partner is fixed, but has not registered again

      const first = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--all-abandoned']);
      expect(first).toMatchObject({ replayed: 5, not_replayable: 0, endpoint_status: 'suspended' });
      await holdsFor('nothing sent to a suspended endpoint', () => ids.every((id) => sentFor(p.path, id).length === 4), QUIET_MS);
      // The attempts ran down the schedule without sending, and the deliveries are abandoned again.
      const again = await abandonedCount(p.ws, 5);
      for (const a of again) expect(a).toMatchObject({ attempts: 4, lastError: 'endpoint_not_active' });
      expect((await suite.clients.notifications.getEndpoint({ workspaceId: p.ws })).endpoint!.status).toBe(EndpointStatus.SUSPENDED);

      // The documented procedure: the partner registers again (challenge echoed), then replay.
      expect((await suite.clients.notifications.putEndpoint({ workspaceId: p.ws, url: p.url, events: ALL })).status).toBe(EndpointStatus.ACTIVE);
      const second = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--all-abandoned']);
      expect(second).toMatchObject({ replayed: 5, endpoint_status: 'active' });
      await eventually(async () => (await list(p.ws, DeliveryState.DELIVERED)).length === 5, 20_000, 'all five delivered');
      for (const id of ids) {
        const sent = sentFor(p.path, id);
        expect(sent).toHaveLength(5);
        expect(sent[4]!.raw).toBe(sent[0]!.raw);
        expect(verifyDelivery(sent[4]!, p.secret).ok).toBe(true);
      }
    },
    120_000,
  );

  withEvents('a guest erased after the abandonment is not in the replayed body (the abandoned body was scrubbed)', async (d) => {
    const name = 'Zoë "guest_name":"x" \\ Ada ✓';
    const p = await partnerAnswering(d, (r) => {
      if (r.json?.event_type === 'endpoint.challenge') return echoAndAccept(r);
      return { status: r.json?.event_type === 'booking.confirmed' && r.json.data.guest_name !== null ? 500 : 200 };
    });
    const g = { guestId: `guest-${randomUUID()}`, guestName: name };
    await d.confirmBooking(p.ws, g);
    const [abandoned] = await abandonedCount(p.ws, 1);
    const original = sentFor(p.path, abandoned!.eventId)[0]!;
    expect(original.json.data.guest_name).toBe(name);

    await d.eraseGuest(g.guestId);
    await suite.receiver.waitFor(() => suite.receiver.at(p.path, 'delivery').some((r) => r.json?.event_type === 'user.erased'), 15_000, 'the user.erased delivery');

    const out = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--event', abandoned!.eventId]);
    expect(out.replayed).toBe(1);
    const replayed = await suite.receiver.waitFor(() => sentFor(p.path, abandoned!.eventId)[4], 10_000, 'the replayed attempt');
    expect(replayed.json.data.guest_name).toBeNull();
    expect(replayed.raw).not.toContain('Ada');
    expect(replayed.raw).toBe(scrubGuestName(original.raw)); // the erasure scrubbed the abandoned body, every other byte kept
    expect(verifyDelivery(replayed, p.secret).ok).toBe(true);
    await eventually(async () => (await list(p.ws, DeliveryState.DELIVERED)).some((i) => i.eventId === abandoned!.eventId), 10_000, 'delivered');
  });

  withEventsOnPostgres('an abandoned delivery without a body (abandoned before replay existed) is counted as not replayable and stays abandoned', async (d) => {
    const url = suite.system.env.DATABASE_URL!;
    const p = await partnerAnswering(d, echoThen(500));
    await d.confirmBooking(p.ws, { guestId: `guest-${randomUUID()}`, guestName: 'Legacy' });
    const [abandoned] = await abandonedCount(p.ws, 1);
    const sql = createSql(url, { max: 1 });
    try {
      // The abandoned delivery keeps its body (the documented rule)...
      const [kept] = await sql<{ body: string | null }[]>`
        select body from notifications.deliveries where workspace_id = ${p.ws} and event_id = ${abandoned!.eventId}`;
      expect(kept!.body).toContain('"guest_name":"Legacy"');
      // ...unlike an abandonment before replay existed (migration 0003): the body gone.
      const gone = await sql`
        update notifications.deliveries set body = null
        where workspace_id = ${p.ws} and event_id = ${abandoned!.eventId} and state = 'abandoned'`;
      expect(gone.count).toBe(1);
    } finally {
      await sql.end({ timeout: 5 });
    }
    suite.receiver.on(p.path, echoAndAccept);
    const out = await psync(suite.system, ['deliveries', 'replay', '--workspace', p.ws, '--all-abandoned']);
    expect(out).toEqual({ replayed: 0, items: [], not_replayable: 1, endpoint_status: 'active' });
    expect(await list(p.ws)).toEqual([abandoned]);
    expect(jsonLogs(suite.system.logs()).some((l) => l.level === 'warn' && l.workspace_id === p.ws && l.not_replayable === 1)).toBe(true);
  });

  test('the RPC refuses a request without a selection', async () => {
    for (const selection of [{ case: undefined }, { case: 'allAbandoned' as const, value: false }]) {
      const err = errorShape(await rpcError(suite.clients.notifications.replayDeliveries({ workspaceId: randomUUID(), selection })));
      expect(err).toMatchObject({ code: 'InvalidArgument', reason: 'VALIDATION_FAILED', violations: [{ field: 'selection', code: 'required' }] });
    }
    const bad = errorShape(await rpcError(suite.clients.notifications.replayDeliveries({ workspaceId: 'nope', selection: { case: 'allAbandoned', value: true } })));
    expect(bad.violations).toEqual([{ field: 'workspace_id', code: 'format' }]);
  });

  test('usage errors: one line on stderr, exit 2, nothing replayed', async () => {
    const ws = randomUUID();
    const cases: [string[], string][] = [
      [[], 'missing --workspace'],
      [['--workspace', 'nope', '--all-abandoned'], '--workspace must be a workspace id'],
      [['--workspace', ws], 'give exactly one of --event EVENT_ID or --all-abandoned'],
      [['--workspace', ws, '--event', randomUUID(), '--all-abandoned'], 'give exactly one of --event EVENT_ID or --all-abandoned'],
      [['--workspace', ws, '--event', 'not-a-uuid'], '--event must be an event_id'],
      [['--workspace', ws, '--all-abandoned=yes'], '--all-abandoned takes no value'],
      [['--workspace', ws, '--all-abandoned', '--state', 'abandoned'], 'unknown flag --state'],
      [['--workspace', ws, '--event'], '--event needs a value'],
    ];
    for (const [args, message] of cases) {
      const r = await psyncFails(suite.system, ['deliveries', 'replay', ...args]);
      expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
      const lines = linesOf(r.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(message);
    }
    // The usage line lists the command.
    const usage = await psyncFails(suite.system, []);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('deliveries replay');
  });
});
