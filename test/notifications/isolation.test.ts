/**
 * Fair, isolated, adaptive delivery in the running system (docs/notifications.md,
 * "Scheduling and isolation"), against real HTTPS partner endpoints: beside healthy
 * partners, 8 endpoints that accept the connection and never answer, 2 that answer 500
 * and 2 that answer 429 with Retry-After.
 *
 * - healthy partners' deliveries all arrive while the silent ones are still pending;
 * - no attempt reaches a throttling endpoint before its Retry-After has passed;
 * - the failing endpoints' breakers open (`psync webhook health`), bounding their attempts;
 * - once the bad endpoints answer 2xx again, every delivery is delivered.
 *
 * Bounds are generous and about orderings and counts, so that a loaded two-core machine
 * does not make them flake. The retry schedule is long (sixty 1 s delays, then 2 s: the
 * breaker probes every 1–2 s, and nothing is abandoned while the test runs).
 */
import { randomUUID } from 'node:crypto';
import { DeliveryState, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { backends } from '../support/system';
import { BREAKER_THRESHOLD } from '../../services/notifications/endpoint-health';
import { PER_ENDPOINT_CONCURRENCY } from '../../services/notifications/delivery-limits';
import { eventually, psync, sleep, type EventDriver } from './support/harness';
import { echoAndAccept, dedupe, type Handler, type Received } from './support/receiver';
import { webhookSuite } from './support/suite';

const ALL = [WebhookEventType.BOOKING_CONFIRMED, WebhookEventType.BOOKING_CANCELLED, WebhookEventType.USER_ERASED];
const SCHEDULE = [...Array<number>(60).fill(1), 2].join(',');
const RETRY_AFTER_S = 5;

const suite = webhookSuite('notifications isolation', { env: { WEBHOOK_RETRY_SCHEDULE: SCHEDULE } });

const silentThenAccept =
  (state: { bad: boolean }): Handler =>
  (r) =>
    r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : state.bad ? { status: 200, hang: true } : echoAndAccept(r);
const failThenAccept =
  (state: { bad: boolean }): Handler =>
  (r) =>
    r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : state.bad ? { status: 500 } : echoAndAccept(r);
const throttleThenAccept =
  (state: { bad: boolean }): Handler =>
  (r) =>
    r.json?.event_type === 'endpoint.challenge' ? echoAndAccept(r) : state.bad ? { status: 429, headers: { 'retry-after': String(RETRY_AFTER_S) } } : echoAndAccept(r);

interface Partner {
  ws: string;
  path: string;
}

async function partner(d: EventDriver, handler: Handler): Promise<Partner> {
  const ws = await d.newWorkspace();
  const path = `/isolation/${ws}`;
  suite.receiver.on(path, handler);
  await suite.clients.notifications.putEndpoint({ workspaceId: ws, url: `${suite.receiver.baseUrl}${path}`, events: ALL });
  return { ws, path };
}

const deliveries = (p: Partner): Received[] => suite.receiver.at(p.path, 'delivery');

async function listed(p: Partner, state?: DeliveryState) {
  return (await suite.clients.notifications.listDeliveries({ workspaceId: p.ws, state })).items;
}

describe(`isolation (${backends.database} + ${backends.bus})`, () => {
  suite.withEvents(
    '8 silent, 2 failing and 2 throttling endpoints do not hold up healthy partners; all delivered once they recover',
    async (d) => {
      const bad = { bad: true };
      const silent = await Promise.all(Array.from({ length: 8 }, () => partner(d, silentThenAccept(bad))));
      const failing = await Promise.all(Array.from({ length: 2 }, () => partner(d, failThenAccept(bad))));
      const throttling = await Promise.all(Array.from({ length: 2 }, () => partner(d, throttleThenAccept(bad))));
      const healthy = await Promise.all(Array.from({ length: 4 }, () => partner(d, echoAndAccept)));
      const book = (p: Partner) => d.confirmBooking(p.ws, { guestId: `g-${randomUUID()}`, guestName: 'Isolation' });

      // The bad endpoints' bookings first, so that their backlog is the oldest.
      for (const p of [...silent, ...failing, ...throttling]) for (let i = 0; i < 3; i++) await book(p);
      await suite.receiver.waitFor(() => silent.every((p) => deliveries(p).length >= 3), 30_000, 'the silent endpoints holding attempts');

      // Healthy partners' bookings, while every silent endpoint holds attempts open.
      const started = Date.now();
      for (let round = 0; round < 5; round++) for (const p of healthy) await book(p);
      await suite.receiver.waitFor(() => healthy.every((p) => dedupe(deliveries(p)).length === 5), 20_000, 'every healthy delivery');
      const healthyDone = Date.now();
      // Generous "promptly": well under one attempt time-out (10 s) for 20 bookings made one by one.
      expect(healthyDone - started).toBeLessThan(20_000);
      for (const p of healthy) expect(deliveries(p)).toHaveLength(5); // each once, no retry needed
      // The silent ones are still pending.
      for (const p of silent) expect((await listed(p, DeliveryState.PENDING)).length).toBe(3);

      // The failing endpoints' breakers open; their attempts stay bounded.
      for (const p of failing) {
        await eventually(
          async () => {
            const h = await psync(suite.system, ['webhook', 'health', '--workspace', p.ws]);
            return ['open', 'half_open'].includes(h.breaker) && h;
          },
          30_000,
          'the breaker open',
        );
      }
      const health = await psync(suite.system, ['webhook', 'health', '--workspace', failing[0]!.ws]);
      expect(health).toMatchObject({
        workspace_id: failing[0]!.ws,
        breaker: expect.stringMatching(/^(open|half_open)$/),
        last_failure_status: 500,
        last_failure_error: 'http_status',
        pending: 3,
      });
      expect(health.consecutive_failures).toBeGreaterThanOrEqual(BREAKER_THRESHOLD);
      const badPhaseS = (Date.now() - started) / 1000 + 10;
      for (const p of failing) {
        // Without the breaker: 3 deliveries every second. With it: the threshold, then about one probe every 1–2 s.
        expect(deliveries(p).length).toBeLessThanOrEqual(BREAKER_THRESHOLD + PER_ENDPOINT_CONCURRENCY + badPhaseS);
        expect(deliveries(p).length).toBeLessThan(3 * badPhaseS);
      }

      // Retry-After: wait for a second round of attempts, then check that none came early.
      await suite.receiver.waitFor(() => throttling.every((p) => deliveries(p).length >= 4), 60_000, 'attempts after the Retry-After');
      for (const p of throttling) {
        const at = deliveries(p)
          .map((r) => r.at)
          .sort((a, b) => a - b);
        // Attempts sent together (one claim) arrive within a moment; any later one waited the full Retry-After.
        for (let i = 1; i < at.length; i++) {
          const gap = at[i]! - at[i - 1]!;
          if (gap > 1000) expect(gap).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 100);
        }
        expect(at.at(-1)! - at[0]!).toBeGreaterThanOrEqual(RETRY_AFTER_S * 1000 - 100);
      }

      // Recovery: everything is delivered, once each as far as the partner is concerned.
      bad.bad = false;
      for (const p of [...silent, ...failing, ...throttling]) {
        await eventually(async () => (await listed(p, DeliveryState.DELIVERED)).length === 3, 90_000, `recovered endpoint ${p.path}`);
        expect(await listed(p, DeliveryState.ABANDONED)).toHaveLength(0);
        expect(dedupe(deliveries(p).filter((r) => r.at > 0))).toHaveLength(3);
      }
      for (const p of failing) {
        const h = await psync(suite.system, ['webhook', 'health', '--workspace', p.ws]);
        expect(h).toMatchObject({ breaker: 'closed', consecutive_failures: 0, pending: 0, not_before: null });
      }
      await sleep(0);
    },
    240_000,
  );
});
