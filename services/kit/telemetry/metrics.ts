/**
 * Partner Sync's own metric instruments, in one place; those the OpenTelemetry semantic
 * conventions define (HTTP server, RPC, database, messaging) are in semconv.ts and bound
 * with these. The names are a contract: the chart's PrometheusRule and Grafana
 * dashboard (helm/psync/) query them as they are written here.
 *
 * Instruments live on the meter provider telemetry.ts starts (bindMeterProvider);
 * before that, and in processes without telemetry (tests, the migrate Job), every
 * recording function is a no-op. Observable gauges read their values at scrape time
 * from callbacks the owning components register (registerOutboxLag,
 * registerWebhookGauges, registerBusConsumer). The kit depends on no service: services call the record
 * and register functions below.
 */
import type { Attributes, BatchObservableResult, Counter, Histogram, Meter, MeterProvider, ObservableResult } from '@opentelemetry/api';
import { bindSemconvInstruments, legacyHttpSeries, recordHttpServerRequest } from './semconv';

/** Latency buckets of the HTTP histogram, in seconds. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Instruments {
  httpRequests: Counter;
  httpDuration: Histogram;
  rateLimitRefusals: Counter;
  tokensIssued: Counter;
  photosProcessed: Counter;
  webhookDeliveries: Counter;
  webhookAbandoned: Counter;
  internalAuthRefusals: Counter;
  webhookEndpointEvents: Counter;
  webhookAttemptDuration: Histogram;
  busEventsRefused: Counter;
  workerRounds: Counter;
  workerRoundsFailed: Counter;
  workerRoundItems: Histogram;
  workerBusy: Counter;
  requestLogDropped: Counter;
  busConsumerRecreated: Counter;
}

let current: Instruments | undefined;

type OutboxLag = () => Promise<{ pending: number; oldestAgeSeconds: number }>;
const outboxSources = new Map<string, OutboxLag>();

/** A durable consumer as its subscriber last read it from NATS (nats-consumer-watch.ts). */
export type BusConsumerState = { present: true; pending: number } | { present: false };
type BusConsumerRead = () => Promise<BusConsumerState>;
const busConsumerSources = new Map<string, BusConsumerRead>();

/** Whether this process's NATS connection is anonymous to a server off loopback (bus-nats.ts); undefined without NATS. */
let busAnonymous: boolean | undefined;

/** The notifications service's backlog, read at scrape time (registerWebhookGauges). */
export interface WebhookGaugeSources {
  /** Pending deliveries and the age of the oldest (0 when none); one query for both. */
  deliveryBacklog: () => Promise<{ pending: number; oldestAgeSeconds: number }>;
  /** Deletion requests escalated (past DELETION_ESCALATION_SECONDS) and not acknowledged. */
  erasuresUnacknowledged: () => Promise<number>;
  /** Endpoints whose circuit breaker is open or half-open (closed ones are not counted). */
  endpointBreakers: () => Promise<{ open: number; halfOpen: number }>;
}
let webhookSources: WebhookGaugeSources | undefined;

/** Outcome of one webhook delivery attempt (psync_webhook_deliveries_total). */
export type WebhookDeliveryOutcome = 'delivered' | 'failed' | 'abandoned';

/** Creates the instruments on `provider` (`env`: OTEL_SEMCONV_STABILITY_OPT_IN, semconv.ts); returns the function that detaches them. */
export function bindMeterProvider(provider: MeterProvider, env: Record<string, string | undefined> = process.env): () => void {
  const meter: Meter = provider.getMeter('psync');
  const inst: Instruments = {
    httpRequests: meter.createCounter('psync_http_requests_total', {
      description: 'Deprecated, use http.server.request.duration (its count): public gateway requests by route template and HTTP status code',
    }),
    httpDuration: meter.createHistogram('psync_http_request_duration_seconds', {
      description: 'Deprecated, use http.server.request.duration: public gateway request latency by route template',
      unit: 's',
      advice: { explicitBucketBoundaries: HTTP_BUCKETS },
    }),
    rateLimitRefusals: meter.createCounter('psync_rate_limit_refusals_total', {
      description: 'Requests refused with 429 (contract quota or token endpoint ceiling)',
    }),
    tokensIssued: meter.createCounter('psync_tokens_issued_total', { description: 'Access tokens issued' }),
    photosProcessed: meter.createCounter('psync_photos_processed_total', {
      description: 'Photos processed by outcome (ready, or the rejection reason)',
    }),
    webhookDeliveries: meter.createCounter('psync_webhook_deliveries_total', {
      description: 'Webhook delivery attempts by outcome (delivered, failed, abandoned)',
    }),
    webhookAbandoned: meter.createCounter('psync_webhook_deliveries_abandoned_total', {
      description: 'Webhook deliveries abandoned after the last retry',
    }),
    webhookEndpointEvents: meter.createCounter('psync_webhook_endpoint_events_total', {
      description:
        'Per-endpoint delivery control events: breaker_opened, breaker_closed, retry_after_honoured (a 429/503 Retry-After held the endpoint), gone (410: suspended), suspended (any suspension), challenge_echoed and challenge_failed (registration challenges)',
    }),
    webhookAttemptDuration: meter.createHistogram('psync_webhook_attempt_duration_seconds', {
      description: 'Duration of webhook delivery attempts that reached the network, by outcome (delivered, http_status, timeout, connection_failed …)',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] },
    }),
    workerRounds: meter.createCounter('psync_worker_rounds_total', {
      description: 'Rounds of the background workers (outbox relays, webhook dispatcher, photo pipeline, periodic jobs, bus consumers) by worker',
    }),
    workerRoundsFailed: meter.createCounter('psync_worker_rounds_failed_total', {
      description: 'Worker rounds that failed (retried after a back-off), by worker',
    }),
    workerRoundItems: meter.createHistogram('psync_worker_round_items', {
      description: 'Items a worker round claimed or handled (batch size), by worker',
      advice: { explicitBucketBoundaries: [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000] },
    }),
    workerBusy: meter.createCounter('psync_worker_busy_seconds_total', {
      description: "Time spent in worker rounds, by worker (idle waits excluded; a bus consumer's round is a whole consume session, its waits for messages included)",
      unit: 's',
    }),
    busEventsRefused: meter.createCounter('psync_bus_events_refused_total', {
      description:
        'Domain events from the bus dropped without a delivery because their owner does not prove them (forged, altered or malformed), by event_type and reason (undecodable, malformed, unknown_booking, unknown_erasure, mismatch)',
    }),
    requestLogDropped: meter.createCounter('psync_request_log_dropped_total', {
      description:
        "Contract requests the gateway did not record in the request log, by reason (queue_full: the recorder's bounded queue was full; send_failed: a whole batch failed, identity could not be reached; refused: identity refused that record alone, the rest of its batch was stored)",
    }),
    busConsumerRecreated: meter.createCounter('psync_bus_consumer_recreated_total', {
      description: 'Durable NATS consumers this process found missing while subscribed and created again from their acknowledged position, by durable',
    }),
    internalAuthRefusals: meter.createCounter('psync_internal_auth_refusals_total', {
      description:
        'Internal API calls refused: code unauthenticated (no or a bad credential) or permission_denied (a role calling an RPC not allowed to it), by role (empty when unauthenticated)',
    }),
  };
  // Series that alerts use with rate()/increase() exist from the start, at 0.
  inst.rateLimitRefusals.add(0);
  inst.tokensIssued.add(0);
  inst.requestLogDropped.add(0, { reason: 'queue_full' });
  inst.webhookAbandoned.add(0);
  inst.webhookEndpointEvents.add(0, { event: 'breaker_opened' });
  inst.internalAuthRefusals.add(0, { code: 'unauthenticated', role: '' });
  inst.busEventsRefused.add(0, { event_type: 'booking.confirmed', reason: 'unknown_booking' });

  const lag = meter.createObservableGauge('psync_outbox_lag_seconds', {
    description: 'Age of the oldest unpublished outbox event, per schema',
    unit: 's',
  });
  const pending = meter.createObservableGauge('psync_outbox_pending', {
    description: 'Unpublished outbox events, per schema',
  });
  const observeOutbox = async (r: ObservableResult, which: 'lag' | 'pending') => {
    await Promise.all(
      [...outboxSources].map(async ([schema, read]) => {
        try {
          const v = await read();
          r.observe(which === 'lag' ? v.oldestAgeSeconds : v.pending, { schema });
        } catch {
          // Database unavailable (or closing): no sample rather than a failed scrape.
        }
      }),
    );
  };
  const lagCb = (r: ObservableResult) => observeOutbox(r, 'lag');
  const pendingCb = (r: ObservableResult) => observeOutbox(r, 'pending');
  lag.addCallback(lagCb);
  pending.addCallback(pendingCb);

  const busPending = meter.createObservableGauge('psync_bus_consumer_pending', {
    description:
      'Events on the NATS stream a durable consumer of this process has not acknowledged yet (not yet delivered plus delivered and unacknowledged), by durable; NaN while the consumer does not exist or cannot be read (psync_bus_consumer_up 0); no series while no process runs the consumer (docs/operations.md, "Stream retention")',
  });
  const busUp = meter.createObservableGauge('psync_bus_consumer_up', {
    description: 'Whether a durable consumer of this process exists on NATS (1) or is missing or unreadable (0), by durable; read at every scrape',
  });
  const busAnon = meter.createObservableGauge('psync_bus_anonymous', {
    description:
      'Whether this process connects to a NATS server off loopback without credentials (1) or not (0); no series without NATS (docs/operations.md, "NATS authentication")',
  });
  const busCb = async (r: BatchObservableResult) => {
    if (busAnonymous !== undefined) r.observe(busAnon, busAnonymous ? 1 : 0);
    await Promise.all(
      [...busConsumerSources].map(async ([durable, read]) => {
        // A missing or unreadable consumer is NaN, never 0: a reading of 0 says "caught
        // up", and an observable gauge left unobserved keeps its last value.
        let state: BusConsumerState = { present: false };
        try {
          state = await read();
        } catch {
          // NATS unavailable: the consumer cannot be confirmed.
        }
        r.observe(busPending, state.present ? state.pending : NaN, { durable });
        r.observe(busUp, state.present ? 1 : 0, { durable });
      }),
    );
  };
  meter.addBatchObservableCallback(busCb, [busPending, busUp, busAnon]);

  const queueDepth = meter.createObservableGauge('psync_webhook_delivery_queue_depth', {
    description: 'Webhook deliveries pending (waiting for their first attempt or a retry)',
  });
  const oldestAge = meter.createObservableGauge('psync_webhook_delivery_oldest_age_seconds', {
    description: 'Age of the oldest pending webhook delivery (0 when none)',
    unit: 's',
  });
  const breakers = meter.createObservableGauge('psync_webhook_endpoints_breaker', {
    description: 'Webhook endpoints whose circuit breaker is open or half_open (state label); closed ones are not counted',
  });
  const erasures = meter.createObservableGauge('psync_erasures_unacknowledged', {
    description: 'user.erased deletion requests escalated (unacknowledged past DELETION_ESCALATION_SECONDS)',
  });
  const webhookCb = async (r: BatchObservableResult) => {
    const src = webhookSources;
    if (!src) return; // not the notifications process: no series
    await Promise.all([
      src.deliveryBacklog().then(
        (v) => {
          r.observe(queueDepth, v.pending);
          r.observe(oldestAge, v.oldestAgeSeconds);
        },
        () => undefined, // database unavailable: no sample rather than a failed scrape
      ),
      src.erasuresUnacknowledged().then(
        (n) => r.observe(erasures, n),
        () => undefined,
      ),
      src.endpointBreakers().then(
        (b) => {
          r.observe(breakers, b.open, { state: 'open' });
          r.observe(breakers, b.halfOpen, { state: 'half_open' });
        },
        () => undefined,
      ),
    ]);
  };
  meter.addBatchObservableCallback(webhookCb, [queueDepth, oldestAge, erasures, breakers]);

  const unbindSemconv = bindSemconvInstruments(meter, env);
  current = inst;
  return () => {
    unbindSemconv();
    meter.removeBatchObservableCallback(webhookCb, [queueDepth, oldestAge, erasures, breakers]);
    lag.removeCallback(lagCb);
    pending.removeCallback(pendingCb);
    meter.removeBatchObservableCallback(busCb, [busPending, busUp, busAnon]);
    if (current === inst) current = undefined;
  };
}

/**
 * One answered gateway request: `route` is the route's label and path template
 * (`GET /v1/blocks` and `/v1/blocks`, gateway/contract-router.ts; undefined when none
 * matched), `code` the status. Recorded as `http.server.request.duration` (semconv.ts,
 * `http.route` the template) and, while the old names are kept, as
 * psync_http_requests_total{route,code} and psync_http_request_duration_seconds{route}
 * (`route` the label, "unmatched" when none matched).
 */
export function recordHttpRequest(method: string, route: { label: string; template: string } | undefined, code: number, scheme: string, seconds: number): void {
  if (!current) return;
  recordHttpServerRequest(method, route?.template, code, scheme, seconds);
  if (!legacyHttpSeries()) return;
  const attrs: Attributes = { route: route?.label ?? 'unmatched', code: String(code) };
  current.httpRequests.add(1, attrs);
  current.httpDuration.record(seconds, { route: attrs.route });
}

/** A request refused with 429. */
export function recordRateLimitRefusal(): void {
  current?.rateLimitRefusals.add(1);
}

/** Why the gateway's request recorder dropped records (psync_request_log_dropped_total's `reason`). */
export type RequestLogDropReason = 'queue_full' | 'send_failed' | 'refused';

/** `n` contract requests the gateway's request recorder dropped (gateway/request-recorder.ts). */
export function recordRequestLogDropped(reason: RequestLogDropReason, n: number): void {
  current?.requestLogDropped.add(n, { reason });
}

/** An access token issued. */
export function recordTokenIssued(): void {
  current?.tokensIssued.add(1);
}

/** A photo finished: `outcome` is `ready` or the rejection reason. */
export function recordPhotoProcessed(outcome: string): void {
  current?.photosProcessed.add(1, { outcome });
}

/** One webhook delivery attempt's outcome; `abandoned` also counts in the abandoned total. */
export function recordWebhookDelivery(outcome: WebhookDeliveryOutcome): void {
  if (!current) return;
  current.webhookDeliveries.add(1, { outcome });
  if (outcome === 'abandoned') current.webhookAbandoned.add(1);
}

/**
 * Reports the notifications backlog (psync_webhook_delivery_queue_depth,
 * psync_webhook_delivery_oldest_age_seconds, psync_erasures_unacknowledged) at every
 * scrape; returns the unregister function.
 */
export function registerWebhookGauges(sources: WebhookGaugeSources): () => void {
  webhookSources = sources;
  return () => {
    if (webhookSources === sources) webhookSources = undefined;
  };
}

/** Reports `schema`'s outbox lag at every scrape; returns the unregister function. */
export function registerOutboxLag(schema: string, read: OutboxLag): () => void {
  outboxSources.set(schema, read);
  return () => {
    if (outboxSources.get(schema) === read) outboxSources.delete(schema);
  };
}

/**
 * Reports durable consumer `durable` at every scrape (nats-subscription.ts):
 * psync_bus_consumer_pending and psync_bus_consumer_up. Returns the unregister function.
 */
export function registerBusConsumer(durable: string, read: BusConsumerRead): () => void {
  busConsumerSources.set(durable, read);
  return () => {
    if (busConsumerSources.get(durable) === read) busConsumerSources.delete(durable);
  };
}

/** A durable consumer found missing and created again (nats-consumer-watch.ts). */
export function recordBusConsumerRecreated(durable: string): void {
  current?.busConsumerRecreated.add(1, { durable });
}

/** Sets psync_bus_anonymous for this process's NATS connection (bus-nats.ts). */
export function setBusAnonymous(anonymous: boolean): void {
  busAnonymous = anonymous;
}

/** One internal API call refused by the authentication interceptor (internal-auth.ts). */
export function recordInternalAuthRefusal(code: 'unauthenticated' | 'permission_denied', role: string): void {
  current?.internalAuthRefusals.add(1, { code, role });
}

/** One domain event dropped because its owner does not prove it (services/notifications/event-proof.ts). */
export function recordBusEventRefused(eventType: string, reason: string): void {
  current?.busEventsRefused.add(1, { event_type: eventType, reason });
}

/** A per-endpoint delivery control event (psync_webhook_endpoint_events_total). */
export type WebhookEndpointEvent = 'breaker_opened' | 'breaker_closed' | 'retry_after_honoured' | 'gone' | 'suspended' | 'challenge_echoed' | 'challenge_failed';

/** Counts one per-endpoint delivery control event (psync_webhook_endpoint_events_total). */
export function recordWebhookEndpointEvent(event: WebhookEndpointEvent): void {
  current?.webhookEndpointEvents.add(1, { event });
}

/** One webhook attempt that reached the network, in seconds, by outcome class. */
export function recordWebhookAttempt(seconds: number, outcome: string): void {
  current?.webhookAttemptDuration.record(seconds, { outcome });
}

/** One worker round that succeeded (worker.ts): `items` claimed or handled, `seconds` spent. */
export function recordWorkerRound(worker: string, items: number, seconds: number): void {
  if (!current) return;
  const attrs = { worker };
  current.workerRounds.add(1, attrs);
  current.workerRoundItems.record(items, attrs);
  current.workerBusy.add(seconds, attrs);
}

/** One worker round that failed after `seconds`. */
export function recordWorkerRoundFailed(worker: string, seconds: number): void {
  if (!current) return;
  const attrs = { worker };
  current.workerRounds.add(1, attrs);
  current.workerRoundsFailed.add(1, attrs);
  current.workerBusy.add(seconds, attrs);
}
