/**
 * Signed deliveries from calendar events to a real HTTPS partner receiver (spec
 * "Events"): envelope, data, signatures checked the way a
 * partner must, retries on WEBHOOK_RETRY_SCHEDULE=1,1,1 through to `abandoned`,
 * redirects never followed, subscriptions, pausing, unverified and suspended
 * endpoints, rotation, erasure and its acknowledgement and escalation.
 *
 * Events come from the running system's calendar (ConfirmBooking, CancelBooking,
 * EraseGuest) when it implements them; otherwise they are published on the system's
 * NATS stream exactly as the calendar's outbox would (support/harness.ts `eventDriver`).
 */
import { randomUUID } from 'node:crypto';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { DeliveryState, EndpointStatus, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { backends, logEvents, type RunningSystem } from '../support/system';
import { SystemClients, errorShape, eventually, holdsFor, psync, rpcError, sleep, type EventDriver } from './support/harness';
import { dedupe, echoAndAccept, echoThen, Receiver, verifyDelivery, type Received } from './support/receiver';
import { webhookSuite } from './support/suite';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Long enough for an event to have been delivered if it were going to be. */
const QUIET_MS = 2500;

const suite = webhookSuite('notifications deliveries', { env: { DELETION_ESCALATION_SECONDS: '4' } });
const withEvents = suite.withEvents;
let receiver: Receiver;
let system: RunningSystem;
let c: SystemClients;
// Registered after the suite's own beforeAll, so it runs once the suite is up.
beforeAll(() => {
  ({ receiver, system, clients: c } = suite);
});

/** A new sandbox workspace with a registered endpoint on its own receiver path. */
async function partner(d: EventDriver, events = ALL, opts: { environment?: 'sandbox' | 'production' } = {}) {
  const ws = await d.newWorkspace(opts.environment);
  const path = `/partner/${ws}`;
  const url = `${receiver.baseUrl}${path}`;
  const res = await c.notifications.putEndpoint({ workspaceId: ws, url, events });
  return { ws, path, url, secret: res.signingSecret!, status: res.status };
}

const guest = () => ({ guestId: `guest-${randomUUID()}`, guestName: 'Ada Lovelace' });

/** Deliveries of `kind` received on `path` for booking `ref`. */
function deliveriesFor(path: string, kind: string, ref?: string): Received[] {
  return receiver
    .at(path, 'delivery')
    .filter((r) => r.json?.event_type === kind && (ref === undefined || r.json.data.booking_reference === ref || r.json.data.booking_references?.includes(ref)));
}

async function listDeliveries(ws: string, state?: DeliveryState) {
  return (await c.notifications.listDeliveries({ workspaceId: ws, state })).items;
}

describe(`deliveries (${backends.database} + ${backends.bus})`, () => {
  withEvents('booking.confirmed: envelope, data, signature verified as a partner must, listed as delivered', async (d) => {
    const p = await partner(d);
    const g = guest();
    const before = Date.now();
    const booking = await d.confirmBooking(p.ws, g);
    const [req] = await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed').length > 0 && deliveriesFor(p.path, 'booking.confirmed'));
    expect(req!.method).toBe('POST');
    expect(req!.headers['content-type']).toMatch(/^application\/json/);
    expect(Object.keys(req!.json)).toEqual(['event_id', 'event_type', 'occurred_at', 'data']);
    expect(req!.json.event_id).toMatch(UUID);
    if (booking.eventId) expect(req!.json.event_id).toBe(booking.eventId);
    // occurred_at: when it was confirmed, not when sent.
    const occurred = Date.parse(req!.json.occurred_at);
    expect(occurred).toBeGreaterThanOrEqual(before - 1000);
    expect(occurred).toBeLessThanOrEqual(req!.at);
    expect(req!.json.data).toEqual({
      booking_reference: booking.bookingReference,
      listing_id: expect.any(String),
      provider_id: null,
      check_in: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      check_out: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      check_in_time: expect.stringMatching(/^\d{2}:\d{2}$/),
      check_out_time: expect.stringMatching(/^\d{2}:\d{2}$/),
      party_size: 2,
      guest_name: g.guestName,
      amount_paid: { value: '123.45', currency: 'EUR' },
    });
    expect(req!.raw).not.toContain(g.guestId);
    // Receiver rules 1–3: raw body, fresh timestamp, constant-time comparison.
    expect(req!.headers['x-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(Number(req!.headers['x-signature-timestamp'])).toBeCloseTo(req!.at / 1000, -1);
    expect(req!.headers['x-signature-previous']).toBeUndefined();
    expect(verifyDelivery(req!, p.secret)).toEqual({ ok: true, matched: 'signature' });
    expect(verifyDelivery(req!, p.secret, req!.at + 6 * 60_000)).toMatchObject({ ok: false, reason: 'stale timestamp' });
    expect(verifyDelivery({ ...req!, raw: req!.raw.replace('Ada', 'Bob') }, p.secret).ok).toBe(false);

    const items = await eventually(
      async () => {
        const l = await listDeliveries(p.ws);
        return l.length === 1 && l[0]!.state === DeliveryState.DELIVERED && l;
      },
      10_000,
      'delivered state',
    );
    expect(items[0]).toMatchObject({ eventId: req!.json.event_id, eventType: WebhookEventType.BOOKING_CONFIRMED, attempts: 1, lastStatus: 200 });
    expect(items[0]!.nextAttemptAt).toBeUndefined();

    // psync deliveries list: the documented item shape.
    const out = await psync(system, ['deliveries', 'list', '--workspace', p.ws, '--state', 'delivered']);
    expect(out).toEqual({
      items: [{ event_id: req!.json.event_id, event_type: 'booking.confirmed', state: 'delivered', attempts: 1, last_status: 200, next_attempt_at: null }],
    });
    expect(await psync(system, ['deliveries', 'list', '--workspace', p.ws, '--state', 'abandoned'])).toEqual({ items: [] });
  });

  withEvents('booking.cancelled: reference, cancelled_at, initiated_by; no guest name, no money', async (d) => {
    const p = await partner(d);
    const g = guest();
    const booking = await d.confirmBooking(p.ws, g);
    await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference).length > 0);
    await d.cancelBooking(p.ws, booking.bookingReference, 'host');
    const [req] = await receiver.waitFor(() => deliveriesFor(p.path, 'booking.cancelled').length > 0 && deliveriesFor(p.path, 'booking.cancelled'));
    expect(req!.json.data).toEqual({
      booking_reference: booking.bookingReference,
      listing_id: expect.any(String),
      cancelled_at: expect.any(String),
      initiated_by: 'host',
    });
    expect(req!.raw).not.toContain(g.guestName);
    expect(req!.raw).not.toContain('123.45');
    expect(verifyDelivery(req!, p.secret).ok).toBe(true);
  });

  withEvents('only subscribed kinds are delivered', async (d) => {
    const p = await partner(d, [WebhookEventType.BOOKING_CANCELLED]);
    const booking = await d.confirmBooking(p.ws, guest());
    await d.cancelBooking(p.ws, booking.bookingReference, 'guest');
    await receiver.waitFor(() => deliveriesFor(p.path, 'booking.cancelled').length > 0);
    await holdsFor('the unsubscribed kind not delivered', () => deliveriesFor(p.path, 'booking.confirmed').length === 0, 500);
    const items = await listDeliveries(p.ws);
    expect(items.map((i) => i.eventType)).toEqual([WebhookEventType.BOOKING_CANCELLED]);
  });

  withEvents('pending_verification: nothing is sent until a later registration is echoed', async (d) => {
    const ws = await d.newWorkspace();
    const path = `/partner/${ws}`;
    receiver.on(path, () => ({ status: 200, body: '{"challenge":"wrong"}' }));
    const res = await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL });
    expect(res.status).toBe(EndpointStatus.PENDING_VERIFICATION);
    await d.confirmBooking(ws, guest());
    await holdsFor('nothing sent while pending verification', () => receiver.at(path, 'delivery').length === 0, QUIET_MS);
    expect(await listDeliveries(ws)).toHaveLength(0);

    receiver.on(path, echoAndAccept);
    expect((await c.notifications.putEndpoint({ workspaceId: ws, url: `${receiver.baseUrl}${path}`, events: ALL })).status).toBe(EndpointStatus.ACTIVE);
    const later = await d.confirmBooking(ws, guest());
    await receiver.waitFor(() => deliveriesFor(path, 'booking.confirmed').length > 0);
    expect(deliveriesFor(path, 'booking.confirmed').map((r) => r.json.data.booking_reference)).toEqual([later.bookingReference]);
  });

  withEvents('paused (events []): events during the pause are not delivered, not even after resuming', async (d) => {
    const p = await partner(d);
    await c.notifications.putEndpoint({ workspaceId: p.ws, url: p.url, events: [] });
    const during = await d.confirmBooking(p.ws, guest());
    await holdsFor('nothing delivered while paused', () => deliveriesFor(p.path, 'booking.confirmed', during.bookingReference).length === 0, QUIET_MS);
    const resumed = await c.notifications.putEndpoint({ workspaceId: p.ws, url: p.url, events: ALL });
    expect(resumed.status).toBe(EndpointStatus.ACTIVE);
    expect(resumed.signingSecret).toBeUndefined();
    const after = await d.confirmBooking(p.ws, guest());
    await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed', after.bookingReference).length > 0);
    await holdsFor('the paused event not delivered after resuming', () => deliveriesFor(p.path, 'booking.confirmed', during.bookingReference).length === 0, 500);
    // The secret was kept through the pause.
    expect(verifyDelivery(deliveriesFor(p.path, 'booking.confirmed', after.bookingReference)[0]!, p.secret).ok).toBe(true);
  });

  withEvents('production workspaces get no deliveries', async (d) => {
    const p = await partner(d, ALL, { environment: 'production' });
    await d.confirmBooking(p.ws, guest());
    await holdsFor('no delivery to a production workspace', () => receiver.at(p.path, 'delivery').length === 0, QUIET_MS);
    expect(await listDeliveries(p.ws)).toHaveLength(0);
  });

  withEvents('a failing endpoint: first attempt at once, one retry after each delay (1,1,1), then abandoned and surfaced', async (d) => {
    const p = await partner(d);
    receiver.on(p.path, echoThen(500));
    const booking = await d.confirmBooking(p.ws, guest());
    const attempts = await receiver.waitFor(
      () => {
        const a = deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference);
        return a.length >= 4 && a;
      },
      20_000,
      'four attempts',
    );
    const abandoned = await eventually(
      async () => {
        const l = await listDeliveries(p.ws, DeliveryState.ABANDONED);
        return l.length === 1 && l;
      },
      10_000,
      'abandoned',
    );
    // Longer than the schedule's 1 s step: a fifth attempt would have come.
    await holdsFor('no attempt after abandonment', () => deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference).length === 4, 1500);
    // Same event_id and byte-identical body on every attempt; each freshly signed.
    expect(new Set(attempts.map((a) => a.json.event_id)).size).toBe(1);
    expect(new Set(attempts.map((a) => a.raw)).size).toBe(1);
    for (const a of attempts) expect(verifyDelivery(a, p.secret).ok).toBe(true);
    expect(dedupe(attempts)).toHaveLength(1);
    for (let i = 1; i < 4; i++) {
      const gap = attempts[i]!.at - attempts[i - 1]!.at;
      expect(gap).toBeGreaterThanOrEqual(900);
      expect(gap).toBeLessThan(3000);
    }
    expect(abandoned[0]).toMatchObject({ eventId: attempts[0]!.json.event_id, attempts: 4, lastStatus: 500, lastError: 'http_status' });
    expect(abandoned[0]!.nextAttemptAt).toBeUndefined();
    const cli = await psync(system, ['deliveries', 'list', '--workspace', p.ws, '--state', 'abandoned']);
    expect(cli.items).toEqual([
      { event_id: attempts[0]!.json.event_id, event_type: 'booking.confirmed', state: 'abandoned', attempts: 4, last_status: 500, next_attempt_at: null },
    ]);
    const line = logEvents(system.logs(), 'webhook.delivery.abandoned').find((l) => l.event_id === attempts[0]!.json.event_id);
    expect(line).toMatchObject({ level: 'warn', workspace_id: p.ws, attempts: 4, status: 500 });
  });

  withEvents('pending while retrying: the list shows attempts, last_status and next_attempt_at; a later 2xx delivers', async (d) => {
    const p = await partner(d);
    let n = 0;
    receiver.on(p.path, (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : ++n <= 2 ? { status: 503 } : { status: 202 }));
    await d.confirmBooking(p.ws, guest());
    const pending = await eventually(
      async () => {
        const l = await listDeliveries(p.ws, DeliveryState.PENDING);
        return l.length === 1 && l[0]!.attempts >= 1 && l;
      },
      10_000,
      'pending with an attempt',
    );
    expect(pending[0]!.lastStatus).toBe(503);
    expect(pending[0]!.nextAttemptAt).toBeDefined();
    const cli = await psync(system, ['deliveries', 'list', '--workspace', p.ws]);
    expect(cli.items[0]).toMatchObject({ state: expect.stringMatching(/^(pending|delivered)$/), event_type: 'booking.confirmed' });
    const delivered = await eventually(
      async () => {
        const l = await listDeliveries(p.ws, DeliveryState.DELIVERED);
        return l.length === 1 && l;
      },
      15_000,
      'delivered',
    );
    expect(delivered[0]).toMatchObject({ attempts: 3, lastStatus: 202 });
    expect(delivered[0]!.lastError).toBeUndefined();
  });

  withEvents('a 3xx is a failed attempt: the redirect is never followed', async (d) => {
    const p = await partner(d);
    const elsewhere = `${p.path}/elsewhere`;
    receiver.on(p.path, echoThen(302, { headers: { location: `https://localhost:8443${elsewhere}` } }));
    await d.confirmBooking(p.ws, guest());
    const abandoned = await eventually(
      async () => {
        const l = await listDeliveries(p.ws, DeliveryState.ABANDONED);
        return l.length === 1 && l;
      },
      15_000,
      'abandoned',
    );
    expect(abandoned[0]).toMatchObject({ attempts: 4, lastStatus: 302, lastError: 'redirect' });
    expect(receiver.at(elsewhere)).toHaveLength(0);
  });

  withEvents(
    'a time-out is a failed attempt with no status; the retry delivers',
    async (d) => {
      const p = await partner(d);
      let calls = 0;
      receiver.on(p.path, (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : ++calls === 1 ? { status: 200, hang: true } : { status: 200 }));
      await d.confirmBooking(p.ws, guest());
      const pending = await eventually(
        async () => {
          const l = await listDeliveries(p.ws);
          return l[0] && l[0].attempts >= 1 && l;
        },
        20_000,
        'the timed-out attempt recorded',
      );
      expect(pending[0]).toMatchObject({ lastError: 'timeout' });
      expect(pending[0]!.lastStatus).toBeUndefined();
      const delivered = await eventually(
        async () => {
          const l = await listDeliveries(p.ws, DeliveryState.DELIVERED);
          return l.length === 1 && l;
        },
        10_000,
        'delivered',
      );
      expect(delivered[0]).toMatchObject({ attempts: 2, lastStatus: 200 });
      const sent = deliveriesFor(p.path, 'booking.confirmed');
      expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(10_000); // ATTEMPT_TIMEOUT_MS, then the 1 s delay
    },
    60_000,
  );

  withEvents(
    'one slow partner does not hold up another',
    async (d) => {
      const slow = await partner(d);
      const fast = await partner(d);
      receiver.on(slow.path, (r) => (r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : { status: 200, delayMs: 4000 }));
      for (let i = 0; i < 12; i++) await d.confirmBooking(slow.ws, guest());
      await receiver.waitFor(() => deliveriesFor(slow.path, 'booking.confirmed').length >= 8, 20_000, 'the slow partner saturated');
      const started = Date.now();
      const booking = await d.confirmBooking(fast.ws, guest());
      const [req] = await receiver.waitFor(
        () => deliveriesFor(fast.path, 'booking.confirmed', booking.bookingReference).length > 0 && deliveriesFor(fast.path, 'booking.confirmed', booking.bookingReference),
      );
      expect(req!.at - started).toBeLessThan(2000);
      // The slow partner never had more than PER_ENDPOINT_CONCURRENCY (8) attempts open at once.
      const slowSent = deliveriesFor(slow.path, 'booking.confirmed');
      expect(slowSent.filter((r) => r.at < started).length).toBeLessThanOrEqual(8);
      await eventually(async () => (await listDeliveries(slow.ws, DeliveryState.DELIVERED)).length === 12, 30_000, 'the slow partner served');
    },
    60_000,
  );

  withEvents('after rotate-secret, deliveries carry X-Signature (new) and X-Signature-Previous (old)', async (d) => {
    const p = await partner(d);
    const rotated = await psync(system, ['webhook', 'rotate-secret', '--workspace', p.ws]);
    const booking = await d.confirmBooking(p.ws, guest());
    const [req] = await receiver.waitFor(
      () => deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference).length > 0 && deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference),
    );
    expect(verifyDelivery(req!, rotated.signing_secret)).toEqual({ ok: true, matched: 'signature' });
    expect(verifyDelivery(req!, p.secret)).toEqual({ ok: true, matched: 'previous' });
  });

  withEvents(
    'suspended: five abandoned deliveries in a row suspend; nothing flows; an echoed registration reactivates',
    async (d) => {
      const p = await partner(d);
      receiver.on(p.path, echoThen(500));
      for (let i = 0; i < 5; i++) await d.confirmBooking(p.ws, guest());
      await eventually(async () => (await c.notifications.getEndpoint({ workspaceId: p.ws })).endpoint!.status === EndpointStatus.SUSPENDED, 30_000, 'suspended');
      expect(await listDeliveries(p.ws, DeliveryState.ABANDONED)).toHaveLength(5);
      expect(logEvents(system.logs(), 'webhook.endpoint.suspended').some((l) => l.workspace_id === p.ws)).toBe(true);

      receiver.on(p.path, echoAndAccept);
      const whileSuspended = await d.confirmBooking(p.ws, guest());
      await holdsFor('nothing sent while suspended', () => deliveriesFor(p.path, 'booking.confirmed', whileSuspended.bookingReference).length === 0, QUIET_MS);

      const back = await c.notifications.putEndpoint({ workspaceId: p.ws, url: p.url, events: ALL });
      expect(back.status).toBe(EndpointStatus.ACTIVE);
      const after = await d.confirmBooking(p.ws, guest());
      await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed', after.bookingReference).length > 0);
      expect(deliveriesFor(p.path, 'booking.confirmed', whileSuspended.bookingReference)).toHaveLength(0);
    },
    90_000,
  );

  withEvents('user.erased: delivered with references and provider ids; acknowledgement rules', async (d) => {
    const p = await partner(d);
    const other = await partner(d);
    const skewed = await partner(d);
    const g = guest();
    const booking = await d.confirmBooking(p.ws, g);
    const otherBooking = await d.confirmBooking(other.ws, g);
    await d.confirmBooking(skewed.ws, g);
    await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference).length > 0);
    await d.eraseGuest(g.guestId);
    const [erased] = await receiver.waitFor(() => deliveriesFor(p.path, 'user.erased').length > 0 && deliveriesFor(p.path, 'user.erased'));
    const [otherErased] = await receiver.waitFor(() => deliveriesFor(other.path, 'user.erased').length > 0 && deliveriesFor(other.path, 'user.erased'));
    expect(erased!.json.data).toEqual({ booking_references: [booking.bookingReference], provider_ids: expect.any(Array) });
    expect(otherErased!.json.data.booking_references).toEqual([otherBooking.bookingReference]);
    expect(erased!.raw).not.toContain(g.guestName);
    expect(erased!.raw).not.toContain(g.guestId);
    expect(verifyDelivery(erased!, p.secret).ok).toBe(true);
    const eventId = erased!.json.event_id as string;

    // Another partner's event_id and an unknown one: the same NotFound, indistinguishable.
    const foreign = errorShape(await rpcError(c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId: otherErased!.json.event_id })));
    const unknown = errorShape(await rpcError(c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId: randomUUID() })));
    const malformed = errorShape(await rpcError(c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId: 'nope' })));
    expect(foreign).toEqual({ code: 'NotFound', reason: 'DELETION_REQUEST_NOT_FOUND', violations: [], message: expect.any(String) });
    expect(unknown).toEqual(foreign);
    expect(malformed).toEqual(foreign);

    // Without completed_at: the time of receipt.
    const t0 = Date.now();
    const ack = await c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId });
    expect(ack.eventId).toBe(eventId);
    const at = Number(ack.acknowledgedAt!.seconds) * 1000;
    expect(Math.abs(at - t0)).toBeLessThan(5000);
    expect(ack.completedAt).toEqual(ack.acknowledgedAt);

    // Twice: 200 again with the first acknowledged_at.
    // timing under test: a second later by the server's clock, so a second acknowledgement's time would differ.
    await sleep(1100);
    const again = await c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId, completedAt: timestampFromDate(new Date()) });
    expect(again.acknowledgedAt).toEqual(ack.acknowledgedAt);
    expect(again.completedAt).toEqual(ack.completedAt);

    // With completed_at: recorded as given.
    const done = new Date(Date.now() - 3_600_000);
    const otherAck = await c.notifications.acknowledgeDeletion({ workspaceId: other.ws, eventId: otherErased!.json.event_id, completedAt: timestampFromDate(done) });
    expect(Number(otherAck.completedAt!.seconds)).toBe(Math.floor(done.getTime() / 1000));

    // A completed_at ahead of our clock by less than the skew bound: recorded as the time of receipt, never after it.
    const [skewedErased] = await receiver.waitFor(() => deliveriesFor(skewed.path, 'user.erased').length > 0 && deliveriesFor(skewed.path, 'user.erased'));
    const skewedAck = await c.notifications.acknowledgeDeletion({
      workspaceId: skewed.ws,
      eventId: skewedErased!.json.event_id,
      completedAt: timestampFromDate(new Date(Date.now() + 60_000)),
    });
    expect(skewedAck.completedAt).toEqual(skewedAck.acknowledgedAt);

    const listed = await psync(system, ['deletion-requests', 'list', '--workspace', p.ws]);
    expect(listed.items).toEqual([expect.objectContaining({ event_id: eventId, state: 'acknowledged', booking_references: [booking.bookingReference] })]);
  });

  withEvents('an unacknowledged deletion request escalates to operators (DELETION_ESCALATION_SECONDS=4)', async (d) => {
    const p = await partner(d);
    const g = guest();
    await d.confirmBooking(p.ws, g);
    await d.eraseGuest(g.guestId);
    const [erased] = await receiver.waitFor(() => deliveriesFor(p.path, 'user.erased').length > 0 && deliveriesFor(p.path, 'user.erased'));
    const eventId = erased!.json.event_id as string;
    const open = await psync(system, ['deletion-requests', 'list', '--workspace', p.ws]);
    expect(open.items[0]).toMatchObject({ event_id: eventId, state: expect.stringMatching(/^(open|escalated)$/) });
    const escalated = await eventually(
      async () => {
        const l = await psync(system, ['deletion-requests', 'list', '--workspace', p.ws, '--state', 'escalated']);
        return l.items.length === 1 && l.items[0];
      },
      15_000,
      'escalation',
    );
    expect(escalated).toMatchObject({ event_id: eventId, escalated_at: expect.any(String), acknowledged_at: null });
    expect(logEvents(system.logs(), 'deletion_request.escalated').some((l) => l.level === 'error' && l.event_id === eventId)).toBe(true);
    // Acknowledging later is still accepted.
    await c.notifications.acknowledgeDeletion({ workspaceId: p.ws, eventId });
    const after = await psync(system, ['deletion-requests', 'list', '--workspace', p.ws]);
    expect(after.items[0]).toMatchObject({ state: 'acknowledged', escalated_at: expect.any(String) });
  });

  withEvents('our erasure does not wait: a booking.confirmed still retrying loses the guest name at once', async (d) => {
    const p = await partner(d);
    const g = guest();
    // Refuse the confirmation while it still names the guest.
    receiver.on(p.path, (r) => {
      if (r.json?.event_type === 'endpoint.challenge') return echoAndAccept(r);
      if (r.json?.event_type === 'booking.confirmed' && r.json.data.guest_name !== null) return { status: 500 };
      return { status: 200 };
    });
    const booking = await d.confirmBooking(p.ws, g);
    await receiver.waitFor(() => deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference).length > 0);
    await d.eraseGuest(g.guestId);
    const delivered = await eventually(
      async () => {
        const l = await listDeliveries(p.ws, DeliveryState.DELIVERED);
        return l.find((i) => i.eventType === WebhookEventType.BOOKING_CONFIRMED);
      },
      15_000,
      'the scrubbed confirmation delivered',
    );
    const attempts = deliveriesFor(p.path, 'booking.confirmed', booking.bookingReference);
    expect(attempts[0]!.json.data.guest_name).toBe(g.guestName);
    expect(attempts.at(-1)!.json.data.guest_name).toBeNull();
    expect(attempts.at(-1)!.json.event_id).toBe(delivered.eventId);
    expect(verifyDelivery(attempts.at(-1)!, p.secret).ok).toBe(true);
  });
});

describe('through the public gateway', () => {
  /** A sandbox (or production) workspace and an access token for it. */
  async function tokenFor(env: 'sandbox' | 'production'): Promise<{ ws: string; token: string }> {
    const w = await psync(system, ['workspace', 'create', '--name', `gw-${randomUUID().slice(0, 8)}`, '--env', env]);
    const k = await psync(system, ['key', 'issue', '--workspace', w.workspace_id]);
    const res = await fetch(`${system.gatewayUrl}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${k.api_key}` } });
    expect(res.status).toBe(200);
    return { ws: w.workspace_id, token: ((await res.json()) as { access_token: string }).access_token };
  }

  const call = async (method: string, path: string, token: string, body?: unknown) => {
    const res = await fetch(`${system.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', json: text ? JSON.parse(text) : undefined };
  };

  withEvents('PUT /v1/webhooks/endpoint, a delivery, and POST /v1/deletion-requests/{event_id}/acknowledge', async (d) => {
    expect(d.kind).toBe('calendar'); // the workspace comes from the gateway's side, its bookings from the calendar
    const { ws, token } = await tokenFor('sandbox');
    const path = `/gateway/${ws}`;
    const url = `${receiver.baseUrl}${path}`;
    const first = await call('PUT', '/v1/webhooks/endpoint', token, { url, events: ['booking.confirmed', 'user.erased'] });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ url, events: ['booking.confirmed', 'user.erased'], status: 'active', signing_secret: expect.stringMatching(/^whsec_/) });
    const again = await call('PUT', '/v1/webhooks/endpoint', token, { url, events: ['booking.confirmed', 'user.erased'] });
    expect(again.json).toEqual({ url, events: ['booking.confirmed', 'user.erased'], status: 'active' });

    // Every refused URL: one generic validation_failed.
    const refusals = [];
    for (const bad of ['http://localhost:8443/x', 'https://localhost:9443/x', 'https://127.0.0.1:8443/x', 'https://no-such-host.invalid/x']) {
      const r = await call('PUT', '/v1/webhooks/endpoint', token, { url: bad, events: [] });
      expect(r.status).toBe(400);
      expect(r.type).toMatch(/^application\/problem\+json/);
      refusals.push({ code: r.json.code, errors: r.json.errors, title: r.json.title, detail: r.json.detail });
    }
    for (const r of refusals) expect(r).toEqual({ ...refusals[0], errors: [{ field: 'url', code: 'invalid' }], code: 'validation_failed' });

    const g = guest();
    const booking = await d.confirmBooking(ws, g);
    await d.eraseGuest(g.guestId);
    const [erased] = await receiver.waitFor(() => deliveriesFor(path, 'user.erased').length > 0 && deliveriesFor(path, 'user.erased'));
    expect(erased!.json.data.booking_references).toEqual([booking.bookingReference]);
    expect(verifyDelivery(erased!, first.json.signing_secret).ok).toBe(true);

    const ack = await call('POST', `/v1/deletion-requests/${erased!.json.event_id}/acknowledge`, token, {});
    expect(ack.status).toBe(200);
    expect(ack.json).toEqual({ event_id: erased!.json.event_id, acknowledged_at: expect.any(String) });
    const twice = await call('POST', `/v1/deletion-requests/${erased!.json.event_id}/acknowledge`, token, { completed_at: new Date().toISOString() });
    expect(twice.json).toEqual(ack.json);
    const unknown = await call('POST', `/v1/deletion-requests/${randomUUID()}/acknowledge`, token, {});
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe('deletion_request_not_found');
  });

  withEvents('a production workspace: 501 not_enabled after validation, nothing registered', async () => {
    const { ws, token } = await tokenFor('production');
    const path = `/gateway/${ws}`;
    const res = await call('PUT', '/v1/webhooks/endpoint', token, { url: `${receiver.baseUrl}${path}`, events: ['booking.confirmed'] });
    expect(res.status).toBe(501);
    expect(res.json.code).toBe('not_enabled');
    expect(receiver.at(path)).toHaveLength(0);
    const bad = await call('PUT', '/v1/webhooks/endpoint', token, { url: 'http://localhost/x', events: ['booking.confirmed'] });
    expect(bad.status).toBe(400);
  });
});
