/**
 * The event bus: how domain events travel between services.
 *
 * Two implementations behind this one interface:
 * - NatsBus (bus-nats.ts): NATS JetStream, used whenever NATS_URL is set. One stream
 *   `<PREFIX>` over subjects `<prefix>.>`, published with `msgID` = event id (JetStream
 *   drops duplicates inside its window), durable pull consumers with explicit ack.
 * - MemoryBus (bus-memory.ts): in-process, for the embedded default; same semantics
 *   for a single process (at-least-once, ordered per subject, redelivery on a throwing
 *   handler).
 *
 * Events enter the bus only through the transactional outbox (outbox-writer.ts, outbox-relay.ts), so a
 * published event always corresponds to a committed change. Delivery is
 * at-least-once: handlers must be idempotent (dedupe on `id` in the kit's
 * processed_events table with `markProcessed`, processed-events.ts).
 */

/** One domain event on the wire. */
export interface BusEvent {
  /** Event id (uuid); also the JetStream msgID used for de-duplication. */
  id: string;
  /** Subject below the bus prefix, e.g. `calendar.booking.confirmed`. */
  subject: string;
  /** Serialized payload (protobuf binary of the event message). */
  data: Uint8Array;
  /** Extra headers, e.g. W3C trace context (`traceparent`). */
  headers?: Record<string, string>;
}

/** A delivered event; the handler's successful return acknowledges it. */
export interface ReceivedEvent extends BusEvent {
  /** 1 on first delivery, higher on redelivery. */
  deliveryCount: number;
}

export interface SubscribeOptions {
  /** Durable consumer name, unique per consuming service, e.g. `notifications-bookings`. */
  durable: string;
  /** Subjects below the prefix; wildcards `*` and `>` as in NATS. */
  subjects: string[];
  /** Called for every event; throwing (or rejecting) makes the bus redeliver it later. */
  handler: (event: ReceivedEvent) => Promise<void>;
}

export interface Subscription {
  /** Stops receiving; in-flight handler calls finish first. */
  stop(): Promise<void>;
}

export interface EventBus {
  /** 'nats' or 'memory', for start-up logs and readiness. */
  readonly kind: 'nats' | 'memory';
  /** Publishes one event; resolves once the bus has stored it (JetStream ack). */
  publish(event: BusEvent): Promise<void>;
  /** Starts a durable consumer; creating an existing one again is harmless. */
  subscribe(opts: SubscribeOptions): Promise<Subscription>;
  /** Throws if the bus cannot be reached. */
  ping(): Promise<void>;
  /** Drains subscriptions and closes the connection. */
  close(): Promise<void>;
  /**
   * Deletes the durable consumer `durable`, so the next subscribe creates it again and
   * reads the stream from its oldest event (after a database restore: run-after-restore.ts).
   * True when there was one to delete; the in-process bus keeps no consumer between
   * runs and answers false.
   */
  forgetConsumer(durable: string): Promise<boolean>;
  /**
   * NATS only: whether a running subscriber pulls from durable consumer `durable` now
   * (a pull request waiting on the server, which only a live subscriber keeps), wherever
   * it runs; false when the consumer does not exist. after-restore-guard.ts asks it.
   */
  consumerInUse?(durable: string): Promise<boolean>;
  /**
   * In-process bus only (its log lives in memory): true when every durable consumer
   * has handled every event published to it so far — nothing would be lost if the
   * process ended now. The runner records it at shutdown (run-process.ts).
   */
  drained?(): boolean;
}
