/**
 * Errors inside the services (docs/decisions.md "Errors have one path"): the constructors every service builds its errors from, and the one
 * server interceptor that decides what a failure nobody mapped on purpose becomes.
 *
 * What a caller of any service sees (docs/decisions.md "Errors have one path"):
 * - a ConnectError thrown on purpose (by a handler, the auth interceptor, or relayed
 *   from another service: INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE …) passes unchanged;
 * - the database or the bus unreachable → UNAVAILABLE / SERVICE_UNAVAILABLE (gateway
 *   `503 service_unavailable`), logged as a warning (sampled: one line per 10 s);
 * - anything else → INTERNAL "internal error" (gateway `500 internal_error`), logged
 *   once here, as an error, with the request id and the trace id; its message and
 *   cause never leave the process.
 *
 * Services therefore have no try/catch of their own for this: a handler throws what
 * it means, or lets a failure through.
 */
import { Code, ConnectError, type Interceptor, type StreamResponse, type UnaryResponse } from '@connectrpc/connect';
import { errors as natsErrors } from '@nats-io/nats-core';
import { JetStreamApiError } from '@nats-io/jetstream';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { LogSampler } from '../base';
import { logEvent, type Logger } from '../base';
import { REQUEST_ID_HEADER, currentRequestId, requestIdFrom, withRequestId } from '../base';
import { activeTraceId } from '../telemetry';

/** One schema violation: the gateway's `errors[]` entry `{field, code}`. */
export interface Violation {
  field: string;
  code: string;
}

/** A ConnectError with a standard Code and an ErrorDetail reason (common/v1/errors.proto). */
export function failure(code: Code, reason: ErrorReason, message: string, cause?: unknown): ConnectError {
  return new ConnectError(message, code, undefined, [{ desc: ErrorDetailSchema, value: { reason } }], cause);
}

/** INVALID_ARGUMENT / VALIDATION_FAILED listing every violation (never the submitted value). */
export function validationFailed(violations: Violation[], message = 'request validation failed'): ConnectError {
  return new ConnectError(message, Code.InvalidArgument, undefined, [
    { desc: ErrorDetailSchema, value: { reason: ErrorReason.VALIDATION_FAILED } },
    { desc: ValidationDetailSchema, value: { violations } },
  ]);
}

/** INVALID_ARGUMENT / VALIDATION_FAILED for one field and the rule it broke. */
export function invalidField(field: string, code: string, message = `${field}: ${code}`): ConnectError {
  return validationFailed([{ field, code }], message);
}

/** NOT_FOUND with a reason (PROPERTY_NOT_FOUND, LISTING_NOT_FOUND, …). */
export function notFound(reason: ErrorReason, message: string): ConnectError {
  return failure(Code.NotFound, reason, message);
}

/** UNAVAILABLE / SERVICE_UNAVAILABLE: something this service needs cannot be reached or is not configured. */
export function serviceUnavailable(message: string, cause?: unknown): ConnectError {
  return failure(Code.Unavailable, ErrorReason.SERVICE_UNAVAILABLE, message, cause);
}

/** The message every INTERNAL answer carries, whatever happened. */
export const INTERNAL_MESSAGE = 'internal error';
/** The message every UNAVAILABLE answer the interceptor makes carries. */
export const UNAVAILABLE_MESSAGE = 'service temporarily unavailable: a database or message bus it needs cannot be reached';

/** SQLSTATEs the services react to by code, never by message text (docs/decisions.md "Errors have one path"). */
export const SqlState = {
  uniqueViolation: '23505',
  exclusionViolation: '23P01',
  serializationFailure: '40001',
  deadlockDetected: '40P01',
} as const;

/** The SQLSTATE of a database error, if it is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Codes of "the connection is gone or never came": Node's socket errors (postgres.js
 * passes them through as they are) and postgres.js's own connection errors
 * (postgres/src/errors.js `Errors.connection`: `code` and `errno` both set).
 */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);

/**
 * SQLSTATEs of a server that is going away or refusing work for now: 57P01
 * admin_shutdown (`pg_ctl -m fast`), 57P02 crash_shutdown, 57P03 cannot_connect_now
 * (starting up, shutting down, in recovery), 53300 too_many_connections, 25006
 * read_only_sql_transaction (the connection reached a standby or a demoted primary,
 * which takes no writes; postgres.js, with patches/postgres+3.4.9+002+read-only-failover.patch,
 * then drops that connection and the next attempt looks for the read-write host).
 * Class 08 (connection_exception) is matched by its prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '25006']);

/**
 * nats.js failures meaning the server cannot be reached or did not answer
 * (@nats-io/nats-core `errors.ts`): no connection (refused, lost, a socket or TLS
 * failure), a closed or draining connection, a time-out, no responders (JetStream not
 * answering, as in a cluster without a leader; @nats-io/jetstream reports that as
 * JetStreamNotEnabled with this as its cause). Matched by class: their names
 * (`TimeoutError`, `ConnectionError`) are common to other libraries and to the platform.
 */
const NATS_UNAVAILABLE_CLASSES = [
  natsErrors.ConnectionError,
  natsErrors.ClosedConnectionError,
  natsErrors.DrainingConnectionError,
  natsErrors.TimeoutError,
  natsErrors.NoRespondersError,
] as const;

/**
 * Whether `err` is nats.js failing a request that was pending when the connection closed
 * or dropped: a RequestError of no cause (nats-core `muxsubscription.ts`, `protocol.ts`;
 * every other RequestError wraps what failed as its `cause`, and the bus cancels no
 * request, the one other way to get one without).
 */
function natsRequestCutOff(err: object): boolean {
  return err instanceof natsErrors.RequestError && err.cause === undefined;
}

/**
 * JetStream's API answering 503 (`JetStream system temporarily unavailable`, err_code
 * 10008): the server is up but its JetStream has no leader yet (a cluster electing one).
 */
function jetStreamLeaderless(err: object): boolean {
  return err instanceof JetStreamApiError && err.status === 503;
}

function natsUnreachable(err: object): boolean {
  return NATS_UNAVAILABLE_CLASSES.some((c) => err instanceof c) || natsRequestCutOff(err) || jetStreamLeaderless(err);
}

function unreachable(err: object): boolean {
  if (natsUnreachable(err)) return true;
  const { code } = err as { code?: unknown };
  if (typeof code !== 'string') return false;
  if (CONNECTION_CODES.has(code)) return true;
  const state = sqlState(err);
  return state !== undefined && (state.startsWith('08') || UNAVAILABLE_SQLSTATES.has(state));
}

/**
 * True when `err` (or what it wraps: `cause`, an AggregateError's `errors`) says the
 * database or the bus cannot be reached now.
 */
export function isUnavailableFailure(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4 || err instanceof ConnectError) return false;
  if (unreachable(err)) return true;
  const e = err as { cause?: unknown; errors?: unknown };
  if (isUnavailableFailure(e.cause, depth + 1)) return true;
  return Array.isArray(e.errors) && e.errors.some((x) => isUnavailableFailure(x, depth + 1));
}

/** Where a failure happened, for its log line. */
export interface FailureSite {
  rpc: string;
  requestId?: string;
  traceId?: string;
  /** The call had already ended (deadline, caller gone) when the failure arrived. */
  signal?: AbortSignal;
}

/** Unavailability is logged at most once per this many ms, with a count of the lines left out. */
const UNAVAILABLE_LOG_EVERY_MS = 10_000;

/**
 * The mapping the interceptor applies, for one failure (exported for its unit tests
 * and for the rare non-RPC path that must answer like an RPC).
 */
export class FailureMapper {
  private readonly sampler = new LogSampler(UNAVAILABLE_LOG_EVERY_MS);

  constructor(private readonly log: Logger) {}

  toConnectError(err: unknown, site: FailureSite): ConnectError {
    if (err instanceof ConnectError) return err;
    const fields = { rpc: site.rpc, request_id: site.requestId, trace_id: site.traceId };
    if (site.signal?.aborted) {
      // The caller has gone (or its deadline passed): nobody reads this answer.
      this.log.debug({ err, ...fields }, 'failure after the call ended');
      return ConnectError.from(site.signal.reason, Code.Canceled);
    }
    if (isUnavailableFailure(err)) {
      // An outage fails every request: one line per 10 s says so without flooding the log.
      this.sampler.sample('unavailable', (notLogged) =>
        this.log.warn({ event: logEvent('rpc.failure.unavailable'), err, ...fields, failures_not_logged: notLogged }, 'database or bus unreachable: answered UNAVAILABLE'),
      );
      return serviceUnavailable(UNAVAILABLE_MESSAGE);
    }
    this.log.error({ event: logEvent('rpc.failure.internal'), err, ...fields }, 'unexpected failure: answered INTERNAL');
    // No cause attached: the failure is logged here, once; nothing of it travels on.
    return new ConnectError(INTERNAL_MESSAGE, Code.Internal);
  }
}

/** Maps the failures of a server-streaming response as they surface during iteration. */
async function* mappedStream<T>(messages: AsyncIterable<T>, map: (err: unknown) => ConnectError): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw map(err);
  }
}

/**
 * The server interceptor of every internal service (run-process.ts puts it inside the
 * tracing interceptor, so the SERVER span is active, and outside the authentication
 * interceptor, so its identity look-ups are mapped too). Also makes the caller's
 * `x-request-id` the current request id (request-id.ts) while the handler runs.
 */
export function errorInterceptor(log: Logger): Interceptor {
  const mapper = new FailureMapper(log);
  return (next) => (req) => {
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER)) ?? currentRequestId();
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const map = (err: unknown) => mapper.toConnectError(err, { rpc, requestId, traceId: activeTraceId(), signal: req.signal });
    const call = async (): Promise<UnaryResponse | StreamResponse> => {
      let res: UnaryResponse | StreamResponse;
      try {
        res = await next(req);
      } catch (err) {
        throw map(err);
      }
      if (!res.stream) return res;
      const traceId = activeTraceId();
      return { ...res, message: mappedStream(res.message, (err) => mapper.toConnectError(err, { rpc, requestId, traceId, signal: req.signal })) };
    };
    return requestId !== undefined && requestId !== currentRequestId() ? withRequestId(requestId, call) : call();
  };
}
