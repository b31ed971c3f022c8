/**
 * Consuming from the NATS bus (bus-nats.ts): one `NatsSubscription` per `subscribe`, a
 * worker pulling from its durable consumer (nats-consumer.ts) and handing each event
 * to the handler.
 *
 * - Explicit ack once the handler returns; a throwing handler gets a `nak` with a
 *   growing delay (redeliveryDelayMs), a long-running one tells the server it is
 *   still working.
 * - A stopping subscription hands back what it has pulled but not handled.
 * - A consumer lost while the subscription runs is noticed within seconds and created
 *   again from its acknowledged position (nats-consumer-watch.ts).
 */
import type { ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { ReceivedEvent, SubscribeOptions, Subscription } from './bus';
import { subjectMatches } from './bus-memory';
import { isConsumerGone, type ConsumerPlace } from './nats-consumer';
import type { ConsumerWatch } from './nats-consumer-watch';
import { inConsumerSpan } from '../telemetry';
import { backoffMs, Worker, type RoundResult } from '../work';

/** How often a long-running handler tells the server it is still working (< ack_wait). */
const WORKING_INTERVAL_MS = 10_000;
/** Messages buffered per pull; small, because a stopping subscription naks what it holds. */
const PULL_BATCH = 32;
/**
 * How long one pull request waits on the server. nats.js asks for a heartbeat every half
 * of it and pulls again after two missed ones: a pull request held by a consumer leader
 * that dies (a NATS node lost) is noticed after about this long. With nats.js's default
 * (30 s) a lost consumer leader stalled deliveries for over 30 s
 * (test/topology/nats-node-loss.test.ts).
 */
const PULL_EXPIRES_MS = 5_000;

/** Redelivery delay after the n-th failed delivery: 250 ms, 500 ms, 1 s … capped at 30 s, with jitter. */
export function redeliveryDelayMs(deliveryCount: number): number {
  return backoffMs(deliveryCount, { baseMs: 250, maxMs: 30_000 });
}

/** What a subscription needs of its bus. */
export interface SubscriptionContext {
  /** The stream and consumers' place, to pull from and to recreate a lost consumer. */
  place: ConsumerPlace;
  js: JetStreamClient;
  /** True once the bus is closing: a failing pull is then the end, not an error. */
  closed(): boolean;
  /** Called when the subscription has stopped. */
  stopped(sub: NatsSubscription): void;
  /**
   * The one watch of durable consumer `durable` in this process, shared by every
   * subscription pulling from it (notifications runs several): one recreation, one
   * count and one log line per loss, whichever puller noticed it.
   */
  watchOf(durable: string, subjects: string[]): ConsumerWatch;
}

/**
 * One durable pull consumer. Its worker's round is one `consume` session, handling
 * messages one by one until the session ends (then the next starts at once) or fails
 * (then the next starts after a back-off). A session that finds the consumer gone
 * recreates it (ConsumerWatch) and the next starts at once.
 */
export class NatsSubscription implements Subscription {
  private iter: ConsumerMessages | null = null;
  private readonly worker: Worker;
  private readonly watch: ConsumerWatch;
  /** Set when the periodic check, not the consume loop, found the consumer gone (for the log line). */
  private noticedBy: string | undefined;
  /** Leaves the watch's periodic check (ConsumerWatch.attach). */
  private detach: () => Promise<void> = async () => {};

  constructor(
    private readonly sub: SubscribeOptions,
    private readonly ctx: SubscriptionContext,
  ) {
    const { log } = ctx.place;
    this.watch = ctx.watchOf(sub.durable, sub.subjects);
    this.worker = new Worker({
      name: `bus-${sub.durable}`,
      idleMs: 0,
      backoff: { baseMs: 500, maxMs: 10_000 },
      round: () => this.session(),
      onError: (err, retryInMs) => log.warn({ err, durable: sub.durable, retry_in_ms: retryInMs }, 'bus: consumer loop failed; restarting'),
    });
  }

  start(): void {
    this.worker.start();
    this.detach = this.watch.attach(() => {
      // Ends the session; the next one finds the consumer gone and recreates it.
      this.noticedBy = 'check';
      this.iter?.stop();
    });
  }

  private async session(): Promise<RoundResult> {
    let handled = 0;
    try {
      const consumer = await this.ctx.js.consumers.get(this.ctx.place.stream, this.sub.durable);
      if (this.worker.isStopping) return { items: 0, more: false };
      // abort_on_missing_resource: a deleted consumer ends the loop (409, or a missed
      // heartbeat whose check finds none) instead of nats.js retrying it in silence.
      this.iter = await consumer.consume({ max_messages: PULL_BATCH, expires: PULL_EXPIRES_MS, abort_on_missing_resource: true });
      if (this.worker.isStopping) this.iter.stop();
      for await (const m of this.iter) {
        if (this.worker.isStopping) {
          // Already fetched but not ours to handle any more: hand it back at once
          // rather than letting it wait out ack_wait.
          m.nak();
          continue;
        }
        await this.handle(m);
        handled++;
      }
    } catch (err) {
      if (this.worker.isStopping || this.ctx.closed()) return { items: handled, more: false };
      if (!isConsumerGone(err)) throw err;
      await this.watch.recreate(this.noticedBy ?? 'consume');
      this.noticedBy = undefined;
      return { items: handled, more: true };
    } finally {
      this.iter = null;
    }
    return { items: handled, more: true };
  }

  private async handle(m: JsMsg): Promise<void> {
    const { prefix, log } = this.ctx.place;
    const fullSubject = m.subject;
    const subject = fullSubject.startsWith(`${prefix}.`) ? fullSubject.slice(prefix.length + 1) : fullSubject;
    if (!this.sub.subjects.some((p) => subjectMatches(p, subject))) {
      // Only without server-side filtering (nats-server < 2.10 with several subjects).
      m.ack();
      return;
    }
    const hdrs: Record<string, string> = {};
    let id = '';
    if (m.headers) {
      for (const k of m.headers.keys()) {
        if (k.toLowerCase() === 'nats-msg-id') id = m.headers.get(k);
        else if (!/^nats-/i.test(k)) hdrs[k] = m.headers.get(k);
      }
    }
    const event: ReceivedEvent = { id, subject, data: m.data, headers: hdrs, deliveryCount: m.info.deliveryCount };
    const working = setInterval(() => m.working(), WORKING_INTERVAL_MS);
    try {
      await inConsumerSpan(event, this.sub.durable, 'nats', () => this.sub.handler(event));
    } catch (err) {
      clearInterval(working);
      const delay = redeliveryDelayMs(event.deliveryCount);
      log.warn({ err, durable: this.sub.durable, subject, event_id: id, delivery: event.deliveryCount, retry_in_ms: delay }, 'bus: handler failed; event will be redelivered');
      m.nak(delay);
      return;
    }
    clearInterval(working);
    try {
      await m.ackAck({ timeout: 5000 });
    } catch (err) {
      // The event was handled; without a confirmed ack it comes again after ack_wait,
      // which idempotent handlers absorb.
      log.warn({ err, durable: this.sub.durable, event_id: id }, 'bus: ack not confirmed');
    }
  }

  async stop(): Promise<void> {
    const checkStopped = this.detach();
    const stopping = this.worker.stop();
    // Ends the consume loop; the worker's stop, awaited below, waits for the session to return.
    this.iter?.stop();
    await Promise.all([stopping, checkStopped]);
    this.ctx.stopped(this);
  }
}
