/**
 * The instruments the OpenTelemetry semantic conventions define for what every process
 * does — serve HTTP, call and serve RPCs, query PostgreSQL, publish and process bus
 * messages — under their convention names and attributes, so a collector's or a
 * vendor's stock dashboards read them as they read any other service
 * (docs/operations.md "Telemetry"). The project's own instruments (deliveries, outbox,
 * photos, workers) stay in metrics.ts.
 *
 * Names and units: `http.server.request.duration`, `rpc.server.call.duration`,
 * `rpc.client.call.duration`, `db.client.operation.duration`,
 * `messaging.process.duration`, `messaging.client.operation.duration` (seconds, with the
 * conventions' bucket advice) and `messaging.client.sent.messages`,
 * `messaging.client.consumed.messages`. The stable names come from
 * `@opentelemetry/semantic-conventions`; the RPC and messaging ones (release candidate
 * and development there) are written here, as that package asks of libraries.
 *
 * Renamed series: the gateway's `psync_http_requests_total` and
 * `psync_http_request_duration_seconds` (metrics.ts) and the RPC spans' `rpc.system`
 * and `rpc.service` attributes are emitted beside the convention's for one release,
 * unless `OTEL_SEMCONV_STABILITY_OPT_IN` lists `http` or `rpc` (the specification's
 * switch for moving to the stable conventions): then only the convention's.
 */
import type { Attributes, Histogram, Counter, Meter } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_SCHEME,
  METRIC_DB_CLIENT_OPERATION_DURATION,
  METRIC_HTTP_SERVER_REQUEST_DURATION,
} from '@opentelemetry/semantic-conventions';

/** RPC conventions (release candidate). */
export const ATTR_RPC_SYSTEM_NAME = 'rpc.system.name';
export const ATTR_RPC_METHOD = 'rpc.method';
export const ATTR_RPC_RESPONSE_STATUS_CODE = 'rpc.response.status_code';
export const RPC_SYSTEM_NAME_CONNECTRPC = 'connectrpc';
/** Messaging conventions (development). */
export const ATTR_MESSAGING_SYSTEM = 'messaging.system';
export const ATTR_MESSAGING_OPERATION_NAME = 'messaging.operation.name';
export const ATTR_MESSAGING_OPERATION_TYPE = 'messaging.operation.type';
export const ATTR_MESSAGING_DESTINATION_NAME = 'messaging.destination.name';
export const ATTR_MESSAGING_CONSUMER_GROUP_NAME = 'messaging.consumer.group.name';
/**
 * `messaging.system` is the bus's kind (bus.ts): `nats`, or `memory` for the embedded
 * default's in-process bus (neither is among the conventions' well-known values, which
 * allow others).
 */
export type MessagingSystem = 'nats' | 'memory';

/** The conventions' bucket advice for request and call durations, in seconds. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** The conventions' bucket advice for database and messaging operation durations, in seconds. */
const OPERATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10];

/** Which renamed series are still emitted under their old names (see the file's comment). */
export interface LegacySeries {
  http: boolean;
  rpc: boolean;
}

/** Reads `OTEL_SEMCONV_STABILITY_OPT_IN` (comma-separated; `http`/`rpc` drop the old form, `…/dup` keeps both). */
export function legacySeries(env: Record<string, string | undefined> = process.env): LegacySeries {
  const opted = new Set(
    (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const keeps = (category: string) => opted.has(`${category}/dup`) || !opted.has(category);
  return { http: keeps('http'), rpc: keeps('rpc') };
}

let legacy: LegacySeries = legacySeries();

/** Whether the old HTTP metric names are still emitted (metrics.ts). */
export function legacyHttpSeries(): boolean {
  return legacy.http;
}

/** Whether RPC spans still carry the old `rpc.system` and `rpc.service` attributes. */
export function legacyRpcAttributes(): boolean {
  return legacy.rpc;
}

interface Instruments {
  httpServer: Histogram;
  rpcServer: Histogram;
  rpcClient: Histogram;
  dbOperation: Histogram;
  messagingProcess: Histogram;
  messagingOperation: Histogram;
  messagingSent: Counter;
  messagingConsumed: Counter;
}

let current: Instruments | undefined;

/** Creates the convention instruments on `meter` (metrics.ts bindMeterProvider); returns the detach function. */
export function bindSemconvInstruments(meter: Meter, env: Record<string, string | undefined> = process.env): () => void {
  legacy = legacySeries(env);
  const duration = (name: string, description: string, buckets: number[]) => meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: buckets } });
  const inst: Instruments = {
    httpServer: duration(METRIC_HTTP_SERVER_REQUEST_DURATION, 'Duration of HTTP server requests (the public gateway)', DURATION_BUCKETS),
    rpcServer: duration('rpc.server.call.duration', 'Duration of incoming internal RPCs', DURATION_BUCKETS),
    rpcClient: duration('rpc.client.call.duration', 'Duration of outgoing internal RPCs, as the caller saw them', DURATION_BUCKETS),
    dbOperation: duration(METRIC_DB_CLIENT_OPERATION_DURATION, 'Duration of PostgreSQL statements, from hand-over to the pool to the answer', OPERATION_BUCKETS),
    messagingProcess: duration('messaging.process.duration', 'Duration of processing one bus message by a durable consumer', OPERATION_BUCKETS),
    messagingOperation: duration('messaging.client.operation.duration', 'Duration of publishing one message to the bus, acknowledgement included', OPERATION_BUCKETS),
    messagingSent: meter.createCounter('messaging.client.sent.messages', { description: 'Messages published to the bus', unit: '{message}' }),
    messagingConsumed: meter.createCounter('messaging.client.consumed.messages', {
      description: 'Messages a durable consumer received from the bus',
      unit: '{message}',
    }),
  };
  current = inst;
  return () => {
    if (current === inst) current = undefined;
  };
}

/** One answered gateway request: `method` as the conventions know it (or `_OTHER`), `route` the path template, undefined when none matched. */
export function recordHttpServerRequest(method: string, route: string | undefined, status: number, scheme: string, seconds: number): void {
  if (!current) return;
  const attrs: Attributes = {
    [ATTR_HTTP_REQUEST_METHOD]: method,
    [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
    [ATTR_URL_SCHEME]: scheme,
  };
  if (route !== undefined) attrs[ATTR_HTTP_ROUTE] = route;
  if (status >= 500) attrs[ATTR_ERROR_TYPE] = String(status);
  current.httpServer.record(seconds, attrs);
}

/**
 * One internal RPC, served or made: `method` is the fully-qualified `package.Service/Method`,
 * `code` the Connect code it ended with (`ok` on success).
 */
export function recordRpcCall(side: 'server' | 'client', method: string, code: string, seconds: number): void {
  if (!current) return;
  const attrs: Attributes = { [ATTR_RPC_SYSTEM_NAME]: RPC_SYSTEM_NAME_CONNECTRPC, [ATTR_RPC_METHOD]: method, [ATTR_RPC_RESPONSE_STATUS_CODE]: code };
  if (code !== 'ok') attrs[ATTR_ERROR_TYPE] = code;
  (side === 'server' ? current.rpcServer : current.rpcClient).record(seconds, attrs);
}

/**
 * The attributes of an internal RPC's span (CLIENT or SERVER): the conventions'
 * `rpc.system.name` and fully-qualified `rpc.method`, and, while the old form is kept,
 * `rpc.system` and `rpc.service`.
 */
export function rpcSpanAttributes(service: string, method: string): Attributes {
  const attrs: Attributes = { [ATTR_RPC_SYSTEM_NAME]: RPC_SYSTEM_NAME_CONNECTRPC, [ATTR_RPC_METHOD]: `${service}/${method}` };
  if (legacy.rpc) {
    attrs['rpc.system'] = 'connect_rpc';
    attrs['rpc.service'] = service;
  }
  return attrs;
}

/** One PostgreSQL statement (sql-telemetry.ts builds the attributes). */
export function recordDbOperation(seconds: number, attrs: Attributes): void {
  current?.dbOperation.record(seconds, attrs);
}

/** One bus message processed by `durable` on a `system` bus (`error` is the failure's class, if it failed). */
export function recordMessageProcessed(system: MessagingSystem, subject: string, durable: string, seconds: number, error?: string): void {
  if (!current) return;
  const attrs: Attributes = {
    [ATTR_MESSAGING_SYSTEM]: system,
    [ATTR_MESSAGING_OPERATION_NAME]: 'process',
    [ATTR_MESSAGING_DESTINATION_NAME]: subject,
    [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: durable,
  };
  current.messagingConsumed.add(1, attrs);
  if (error !== undefined) attrs[ATTR_ERROR_TYPE] = error;
  current.messagingProcess.record(seconds, attrs);
}

/** One message published to the bus and acknowledged by the stream, or failed (`error`). */
export function recordMessageSent(system: MessagingSystem, subject: string, seconds: number, error?: string): void {
  if (!current) return;
  const attrs: Attributes = {
    [ATTR_MESSAGING_SYSTEM]: system,
    [ATTR_MESSAGING_OPERATION_NAME]: 'publish',
    [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
    [ATTR_MESSAGING_DESTINATION_NAME]: subject,
  };
  if (error !== undefined) attrs[ATTR_ERROR_TYPE] = error;
  else current.messagingSent.add(1, attrs);
  current.messagingOperation.record(seconds, attrs);
}

/**
 * The `error.type` of a failure: its `code` when it has a string one (a Connect code,
 * a SQLSTATE, a Node or NATS error code), else its class name, else `_OTHER` — never
 * its message (unbounded, and it may carry data).
 */
export function errorType(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0 && code.length <= 64) return code;
    const name = (err as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof name === 'string' && name.length > 0 && name !== 'Object') return name;
  }
  return '_OTHER';
}
