/**
 * In-process implementation of the event bus (see bus.ts), for the embedded default.
 *
 * Mirrors the JetStream semantics the services rely on, within one process:
 * - an append-only log; publishing an id already seen is dropped (like `msgID`);
 * - durable consumers keep their position by name across stop/subscribe;
 * - each consumer gets matching subjects in log order; a throwing handler gets the
 *   event again after a short, growing delay with `deliveryCount` incremented, while
 *   later events keep flowing (as with a JetStream `nak(delay)`).
 * Nothing survives a restart: the outbox (PostgreSQL) stays the source of truth.
 * `drained()` says whether anything handed to the bus is still unhandled; when a run
 * ends without that (a crash), the next start re-publishes the retained outbox rows
 * and consumers skip what they had already handled (their processed_events marks).
 */
import type { BusEvent, EventBus, ReceivedEvent, SubscribeOptions, Subscription } from './bus';
import type { Logger } from '../base';
import { inConsumerSpan } from '../telemetry';
import { WakeSignal } from '../work';

/** NATS subject matching: `*` matches one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    const token = p[i];
    if (token === '>') return s.length > i;
    if (i >= s.length) return false;
    if (token !== '*' && token !== s[i]) return false;
  }
  return p.length === s.length;
}

/** Redelivery delay after the n-th failed delivery: 50 ms doubling, capped at 5 s. */
function retryDelayMs(deliveryCount: number): number {
  return Math.min(5000, 50 * 2 ** Math.min(Math.max(0, deliveryCount - 1), 7));
}

interface Retry {
  index: number;
  /** Deliveries so far. */
  count: number;
  dueAt: number;
}

/** A durable consumer's state; outlives its subscriptions. */
interface Durable {
  name: string;
  subjects: string[];
  /** Next log index to look at. */
  cursor: number;
  /** Failed deliveries waiting for their retry time. */
  retries: Retry[];
  /** Wakes its subscriptions' loops when there is something to do. */
  wake: WakeSignal;
}

/** Creates an in-process bus. */
export function createMemoryBus(opts: { log: Logger }): EventBus {
  const log = opts.log;
  const events: BusEvent[] = [];
  const seen = new Set<string>();
  const durables = new Map<string, Durable>();
  const active = new Set<MemorySubscription>();
  let closed = false;

  function wakeAll(): void {
    for (const d of durables.values()) d.wake.notify();
  }

  /** Takes the next delivery for `d`: a due retry first, else the next matching event. */
  function claim(d: Durable): { index: number; count: number } | { waitMs: number | null } {
    const now = Date.now();
    let due = -1;
    for (let i = 0; i < d.retries.length; i++) {
      const r = d.retries[i]!;
      if (r.dueAt <= now && (due < 0 || r.index < d.retries[due]!.index)) due = i;
    }
    if (due >= 0) {
      const [r] = d.retries.splice(due, 1);
      return { index: r!.index, count: r!.count + 1 };
    }
    while (d.cursor < events.length) {
      const index = d.cursor++;
      if (d.subjects.some((p) => subjectMatches(p, events[index]!.subject))) return { index, count: 1 };
    }
    const next = d.retries.reduce<number | null>((min, r) => (min === null || r.dueAt < min ? r.dueAt : min), null);
    return { waitMs: next === null ? null : Math.max(1, next - now) };
  }

  /** Deliveries being handled right now, across every subscription. */
  let inFlight = 0;

  class MemorySubscription implements Subscription {
    private stopping = false;
    private readonly loop: Promise<void>;

    constructor(
      private readonly d: Durable,
      private readonly handler: SubscribeOptions['handler'],
    ) {
      this.loop = this.run();
    }

    private async run(): Promise<void> {
      // Start on a later tick, like a network consumer: subscribe() returns first.
      await Promise.resolve();
      while (!this.stopping) {
        const next = claim(this.d);
        if ('waitMs' in next) {
          await this.d.wake.wait(next.waitMs);
          continue;
        }
        const e = events[next.index]!;
        const received: ReceivedEvent = {
          id: e.id,
          subject: e.subject,
          data: e.data,
          headers: { ...(e.headers ?? {}) },
          deliveryCount: next.count,
        };
        inFlight++;
        try {
          await inConsumerSpan(received, this.d.name, 'memory', () => this.handler(received));
        } catch (err) {
          const delay = retryDelayMs(next.count);
          log.warn({ err, durable: this.d.name, subject: e.subject, event_id: e.id, delivery: next.count, retry_in_ms: delay }, 'bus: handler failed; event will be redelivered');
          this.d.retries.push({ index: next.index, count: next.count, dueAt: Date.now() + delay });
        } finally {
          inFlight--;
        }
      }
    }

    async stop(): Promise<void> {
      this.stopping = true;
      this.d.wake.notify();
      await this.loop;
      active.delete(this);
    }
  }

  return {
    kind: 'memory',

    async publish(event: BusEvent): Promise<void> {
      if (closed) throw new Error('bus: closed');
      if (seen.has(event.id)) return;
      seen.add(event.id);
      events.push({
        id: event.id,
        subject: event.subject,
        data: Uint8Array.from(event.data),
        headers: event.headers ? { ...event.headers } : undefined,
      });
      wakeAll();
    },

    async subscribe(sub: SubscribeOptions): Promise<Subscription> {
      if (closed) throw new Error('bus: closed');
      if (sub.subjects.length === 0) throw new Error('bus: subscribe needs at least one subject');
      let d = durables.get(sub.durable);
      if (!d) {
        d = { name: sub.durable, subjects: [...sub.subjects], cursor: 0, retries: [], wake: new WakeSignal() };
        durables.set(sub.durable, d);
      } else {
        // Like a JetStream consumer update: the new filter applies from the current position.
        d.subjects = [...sub.subjects];
      }
      const s = new MemorySubscription(d, sub.handler);
      active.add(s);
      return s;
    },

    async ping(): Promise<void> {
      if (closed) throw new Error('bus: closed');
    },

    async forgetConsumer(): Promise<boolean> {
      return false;
    },

    async close(): Promise<void> {
      closed = true;
      await Promise.all([...active].map((s) => s.stop()));
    },

    drained(): boolean {
      if (inFlight > 0) return false;
      for (const d of durables.values()) {
        if (d.retries.length > 0) return false;
        for (let i = d.cursor; i < events.length; i++) if (d.subjects.some((p) => subjectMatches(p, events[i]!.subject))) return false;
      }
      return true;
    },
  };
}
