/**
 * The one error interceptor (errors.ts), around real handlers on the real internal
 * server (h2c) and through the in-process transport, as run-process.ts installs it
 * (inside the tracing interceptor, outside authentication):
 * - each kind of database or bus unreachability (real postgres.js and nats.js errors
 *   where a test can provoke them, their documented shapes otherwise) → UNAVAILABLE /
 *   SERVICE_UNAVAILABLE with a generic message;
 * - anything else → INTERNAL "internal error", its message never sent, logged once
 *   with the request id (`x-request-id`) and the trace id (the caller's `traceparent`);
 * - a ConnectError thrown on purpose, by a handler or by the authentication step, passes
 *   unchanged, and so do another service's codes relayed by a handler;
 * - failures in a server stream are mapped as they surface.
 */
import net from 'node:net';
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { context } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import postgres from 'postgres';
import { connect as natsConnect } from '@nats-io/transport-node';
import { errors as natsErrors } from '@nats-io/nats-core';
import { JetStreamApiError } from '@nats-io/jetstream';
import { AdminService } from '../../../gen/psync/admin/v1/admin_pb';
import { CalendarService } from '../../../gen/psync/calendar/v1/calendar_pb';
import { ErrorDetailSchema, ErrorReason, ValidationDetailSchema } from '../../../gen/psync/common/v1/errors_pb';
import { IdentityService } from '../../../gen/psync/identity/v1/identity_pb';
import { errorInterceptor, INTERNAL_MESSAGE, isUnavailableFailure, notFound, UNAVAILABLE_MESSAGE, validationFailed } from './errors';
import { HealthState } from './health';
import { InProcessServices } from './in-process-transport';
import { InternalClients } from './internal-client';
import { serverTracingInterceptor, startInternalServer, type InternalServer } from './internal-server';
import { createLogger, type LogEvent } from '../base';
import { currentRequestId, withRequestId } from '../base';
import { contextFromHeaders, startTelemetry, type Telemetry } from '../telemetry';

type Line = Record<string, any>;
const lines: Line[] = [];
const log = createLogger({ level: 'debug', name: 'errors-test' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
const logged = (event: LogEvent) => lines.filter((l) => l.component === 'errors' && l.event === event);

/** What the handlers throw next (a function, so each call gets a fresh error). */
let failWith: () => unknown = () => new Error('unset');
/** What the stand-in authentication step does before the handler. */
let authFails: (() => unknown) | undefined;
/** The request id the handler ran under. */
let handlerRequestId: string | undefined;

/** Stands in for internal-auth.ts: its look-ups can fail, its refusals are ConnectErrors. */
const auth: Interceptor = (next) => async (req) => {
  if (authFails) throw authFails();
  return next(req);
};

let telemetry: Telemetry;
let server: InternalServer;
const health = new HealthState();
const inProcess = new InProcessServices();
const network = new InternalClients([], 5000);
const local = new InternalClients([], 5000);
/** The downstream service a handler relays: its own errors, as another service would answer. */
let downstream: () => ConnectError | undefined = () => undefined;

/** Real errors, provoked once. */
const real: Record<string, unknown> = {};

async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

beforeAll(async () => {
  telemetry = await startTelemetry({
    name: 'test',
    host: '127.0.0.1',
    metricsPort: 0,
    log: createLogger({ level: 'silent', name: 't' }),
    env: {},
    spanProcessors: [new SimpleSpanProcessor(new InMemorySpanExporter())],
  });

  // postgres.js: nothing listening; a server that never answers the start-up; a pool already ended.
  const port = await closedPort();
  const refused = postgres(`postgres://u@127.0.0.1:${port}/d`, { max: 1, connect_timeout: 2 });
  real.pgRefused = await rejectionOf(refused`select 1`);
  await refused.end({ timeout: 0 });
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((s) => void sockets.add(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const timedOut = postgres(`postgres://u@127.0.0.1:${(silent.address() as net.AddressInfo).port}/d`, { max: 1, connect_timeout: 1 });
  real.pgConnectTimeout = await rejectionOf(timedOut`select 1`);
  await timedOut.end({ timeout: 0 });
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => silent.close(() => r()));
  const ended = postgres(`postgres://u@127.0.0.1:${port}/d`, { max: 1 });
  await ended.end();
  real.pgEnded = await rejectionOf(ended`select 1`);
  // nats.js: nothing listening.
  real.natsRefused = await rejectionOf(natsConnect({ servers: `127.0.0.1:${port}`, reconnect: false, timeout: 1000 }));

  health.declare('psync.admin.v1.AdminService');
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health,
    interceptors: [errorInterceptor(log.child({ component: 'errors' })), auth],
    routes(networkRouter) {
      const router = inProcess.recording(networkRouter);
      router.service(AdminService, {
        async migrate() {
          handlerRequestId = currentRequestId();
          throw failWith();
        },
      });
      router.service(IdentityService, {
        async getWorkspace() {
          const err = downstream();
          if (err) throw err;
          return {};
        },
      });
      router.service(CalendarService, {
        async *watchEvents() {
          yield { cursor: '1' };
          throw failWith();
        },
      });
    },
  });
  local.useInProcess(server.url, inProcess, [serverTracingInterceptor, errorInterceptor(log.child({ component: 'errors' })), auth]);
}, 30000);

afterAll(async () => {
  network.close();
  local.close();
  await server?.close(100);
  await telemetry?.shutdown();
});

beforeEach(() => {
  lines.length = 0;
  authFails = undefined;
  handlerRequestId = undefined;
  downstream = () => undefined;
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

/** A postgres.js connection error as postgres/src/errors.js `Errors.connection` builds it. */
const pgConnectionError = (code: string) => Object.assign(new Error(`write ${code} 127.0.0.1:5432`), { code, errno: code, address: '127.0.0.1', port: 5432 });
/** A server error as postgres.js raises it (class PostgresError, `code` = SQLSTATE). */
const pgServerError = (code: string, message: string) => new postgres.PostgresError({ message, code, severity: 'FATAL' } as never);

/**
 * A JetStream request nobody answered, as @nats-io/jetstream reports it: a
 * JetStreamNotEnabled (a class the package does not export) whose cause is the request's.
 */
const jetStreamNoResponders = () => {
  const request = new natsErrors.RequestError("no responders: '$JS.API.INFO'", { cause: new natsErrors.NoRespondersError('$JS.API.INFO') });
  return Object.assign(new Error('jetstream is not enabled', { cause: request }), { name: 'JetStreamNotEnabled' });
};

const UNAVAILABLE_CASES: [string, () => unknown][] = [
  ['postgres.js ECONNREFUSED (real)', () => real.pgRefused],
  ['postgres.js CONNECT_TIMEOUT (real)', () => real.pgConnectTimeout],
  ['postgres.js CONNECTION_ENDED (real)', () => real.pgEnded],
  ['postgres.js CONNECTION_CLOSED', () => pgConnectionError('CONNECTION_CLOSED')],
  ['postgres.js CONNECTION_DESTROYED', () => pgConnectionError('CONNECTION_DESTROYED')],
  ['socket ECONNRESET', () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' })],
  ['SQLSTATE 08006 connection_failure', () => pgServerError('08006', 'connection failure')],
  ['SQLSTATE 08001 sqlclient_unable_to_establish_sqlconnection', () => pgServerError('08001', 'could not connect')],
  ['SQLSTATE 57P01 admin_shutdown', () => pgServerError('57P01', 'terminating connection due to administrator command')],
  ['SQLSTATE 57P02 crash_shutdown', () => pgServerError('57P02', 'terminating connection because of crash of another server process')],
  ['SQLSTATE 57P03 cannot_connect_now', () => pgServerError('57P03', 'the database system is starting up')],
  ['SQLSTATE 53300 too_many_connections', () => pgServerError('53300', 'sorry, too many clients already')],
  ['SQLSTATE 25006 read_only_sql_transaction (a standby or a demoted primary)', () => pgServerError('25006', 'cannot execute INSERT in a read-only transaction')],
  ['nats.js ConnectionError "connection refused" (real)', () => real.natsRefused],
  ['nats.js TimeoutError', () => new natsErrors.TimeoutError()],
  ['nats.js ClosedConnectionError', () => new natsErrors.ClosedConnectionError()],
  ['nats.js DrainingConnectionError', () => new natsErrors.DrainingConnectionError()],
  // A request pending when the connection closed, as the request wraps it (nats-core request.ts).
  ['nats.js RequestError "connection closed"', () => new natsErrors.RequestError('connection closed', { cause: new natsErrors.RequestError('connection closed') })],
  ['nats.js RequestError "connection disconnected"', () => new natsErrors.RequestError('connection disconnected')],
  ['nats.js no responders (JetStream without a leader), as @nats-io/jetstream reports it', () => jetStreamNoResponders()],
  ['a JetStream API 503 (no leader elected yet)', () => new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' })],
  [
    'an AggregateError of refused connections (Node happy eyeballs)',
    () => Object.assign(new AggregateError([pgConnectionError('ECONNREFUSED')], 'connect failed'), { code: 'ECONNREFUSED' }),
  ],
  ['a wrapper whose cause is a lost connection', () => new Error('transaction failed', { cause: pgServerError('57P01', 'terminating connection') })],
];

const INTERNAL_CASES: [string, () => unknown][] = [
  ['a plain Error', () => new Error('secret detail: relation "x" at 10.0.0.7')],
  ['a TypeError', () => new TypeError("secret detail: cannot read properties of undefined (reading 'id')")],
  ['an unhandled unique violation (SQLSTATE 23505)', () => pgServerError('23505', 'secret detail: duplicate key value violates unique constraint')],
  ['an undefined table (SQLSTATE 42P01)', () => pgServerError('42P01', 'secret detail: relation "catalog.nope" does not exist')],
  ['a closed in-process bus', () => new Error('secret detail: bus: closed')],
  ['a thrown string', () => 'secret detail as a string'],
  [
    'nats.js PermissionViolationError (not an outage)',
    () => new natsErrors.PermissionViolationError('Permissions Violation for Publish to "$JS.API.STREAM.UPDATE.PSYNC"', 'publish', '$JS.API.STREAM.UPDATE.PSYNC'),
  ],
  ['a JetStream API error (not an outage)', () => new JetStreamApiError({ code: 500, err_code: 10049, description: 'stream configuration update can not change storage type' })],
];

describe.each([
  ['h2c', network],
  ['in process', local],
])('over %s', (_transport, clients) => {
  const admin = () => clients.client(AdminService, server.url);

  /** Calls Migrate (which fails); with `traceparent`, inside that trace (the kit client sends its own span's). */
  async function callFailing(headers: Record<string, string> = {}): Promise<ConnectError> {
    const { traceparent, ...rest } = headers;
    try {
      await context.with(contextFromHeaders(traceparent ? { traceparent } : undefined), () => admin().migrate({}, { headers: rest }));
    } catch (err) {
      return ConnectError.from(err);
    }
    throw new Error('expected a failure');
  }

  test.each(UNAVAILABLE_CASES)('%s → UNAVAILABLE / SERVICE_UNAVAILABLE, generic message', async (_name, make) => {
    const thrown = make();
    expect(thrown).toBeTruthy();
    failWith = make;
    const err = await callFailing({ 'x-request-id': 'req-unavailable' });
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toBe(UNAVAILABLE_MESSAGE);
    expect(err.findDetails(ErrorDetailSchema)[0]?.reason).toBe(ErrorReason.SERVICE_UNAVAILABLE);
    const warned = logged('rpc.failure.unavailable');
    expect(warned.length).toBeLessThanOrEqual(1); // sampled: at most one line per 10 s
  });

  test.each(INTERNAL_CASES)('%s → INTERNAL, message withheld, logged once with request id and trace id', async (_name, make) => {
    const thrown = make();
    const detail = thrown instanceof Error ? thrown.message : String(thrown);
    const inJson = JSON.stringify(detail).slice(1, -1);
    failWith = () => thrown;
    const err = await callFailing({ 'x-request-id': 'req-internal-1', traceparent: TRACEPARENT });
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe(INTERNAL_MESSAGE);
    expect(err.cause).toBeUndefined();
    expect(JSON.stringify([...err.metadata]) + err.message).not.toContain(detail);
    const errors = logged('rpc.failure.internal');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ level: 'error', rpc: 'psync.admin.v1.AdminService/Migrate', request_id: 'req-internal-1', trace_id: TRACE_ID });
    expect(JSON.stringify(errors[0])).toContain(inJson);
    // Nothing else logged the failure again.
    expect(lines.filter((l) => JSON.stringify(l).includes(inJson))).toHaveLength(1);
  });

  test("the request id of the calling request is the handler's current request id", async () => {
    failWith = () => new Error('x');
    await callFailing({ 'x-request-id': 'req-propagated' });
    expect(handlerRequestId).toBe('req-propagated');
  });

  test('the kit client sends the current request id as x-request-id (the gateway runs each request in one)', async () => {
    failWith = () => new Error('secret detail');
    await withRequestId('gateway-request-7', () => callFailing());
    expect(handlerRequestId).toBe('gateway-request-7');
    expect(logged('rpc.failure.internal')[0]).toMatchObject({ request_id: 'gateway-request-7' });
  });

  test('a malformed x-request-id is not taken (nor logged)', async () => {
    failWith = () => new Error('secret detail');
    await callFailing({ 'x-request-id': 'not an id; '.repeat(10) });
    expect(logged('rpc.failure.internal')[0]!.request_id).toBeUndefined();
  });

  test('a ConnectError thrown on purpose passes unchanged: code, message, details, metadata', async () => {
    failWith = () => {
      const e = validationFailed([{ field: 'name', code: 'max_length' }], 'name is too long');
      e.metadata.set('x-detail', 'kept');
      return e;
    };
    const err = await callFailing();
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe('name is too long');
    expect(err.findDetails(ValidationDetailSchema)[0]?.violations).toEqual([expect.objectContaining({ field: 'name', code: 'max_length' })]);
    expect(err.metadata.get('x-detail')).toBe('kept');
    expect(lines.filter((l) => l.component === 'errors')).toHaveLength(0);
  });

  test('an UNAVAILABLE thrown on purpose (a capability not configured) keeps its own message', async () => {
    failWith = () => new ConnectError('webhook signing secrets cannot be stored', Code.Unavailable);
    const err = await callFailing();
    expect(err.code).toBe(Code.Unavailable);
    expect(err.rawMessage).toBe('webhook signing secrets cannot be stored');
  });

  test('the authentication step: its refusals pass unchanged, its failed look-ups are mapped', async () => {
    authFails = () => new ConnectError('missing or invalid internal API credential', Code.Unauthenticated);
    let err = await callFailing();
    expect(err.code).toBe(Code.Unauthenticated);
    expect(err.rawMessage).toBe('missing or invalid internal API credential');

    authFails = () => pgConnectionError('ECONNREFUSED');
    err = await callFailing();
    expect(err.code).toBe(Code.Unavailable);

    authFails = () => new Error('secret detail in auth');
    err = await callFailing();
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe(INTERNAL_MESSAGE);
  });

  test.each([
    ['INVALID_ARGUMENT', () => validationFailed([{ field: 'listing_id', code: 'format' }])],
    ['NOT_FOUND', () => notFound(ErrorReason.LISTING_NOT_FOUND, 'listing not found')],
    ['FAILED_PRECONDITION', () => new ConnectError('hold not live', Code.FailedPrecondition)],
    ['INTERNAL', () => new ConnectError(INTERNAL_MESSAGE, Code.Internal)],
    ['UNAVAILABLE', () => new ConnectError('down', Code.Unavailable)],
  ])('a downstream %s relayed by a handler keeps its code (never UNAVAILABLE unless it was)', async (name, make) => {
    // The handler calls "another service" (IdentityService.GetWorkspace, hosted here) and lets its error through.
    downstream = make;
    let relayed: unknown;
    try {
      await clients.client(IdentityService, server.url).getWorkspace({});
    } catch (err) {
      relayed = err;
    }
    failWith = () => relayed;
    const err = await callFailing();
    expect(Code[err.code]).toBe(Code[make().code]);
    expect(err.rawMessage).toBe(make().rawMessage);
    if (name !== 'UNAVAILABLE') expect(err.code).not.toBe(Code.Unavailable);
  });
});

describe('server streams', () => {
  test('a failure after the first message is mapped as it surfaces', async () => {
    failWith = () => pgConnectionError('CONNECTION_CLOSED');
    const got: string[] = [];
    let caught: ConnectError | undefined;
    try {
      for await (const m of network.client(CalendarService, server.url).watchEvents({})) got.push(m.cursor);
    } catch (err) {
      caught = ConnectError.from(err);
    }
    expect(got).toEqual(['1']);
    expect(caught?.code).toBe(Code.Unavailable);

    failWith = () => new Error('secret detail in a stream');
    caught = undefined;
    try {
      for await (const _ of network.client(CalendarService, server.url).watchEvents({})) void _;
    } catch (err) {
      caught = ConnectError.from(err);
    }
    expect(caught?.code).toBe(Code.Internal);
    expect(caught?.rawMessage).toBe(INTERNAL_MESSAGE);
    expect(logged('rpc.failure.internal')).toHaveLength(1);
  });
});

describe('isUnavailableFailure', () => {
  test('never for ConnectErrors, other SQLSTATEs, or look-alike codes of other libraries', () => {
    expect(isUnavailableFailure(new ConnectError('x', Code.Unavailable))).toBe(false);
    expect(isUnavailableFailure(pgServerError('40001', 'could not serialize'))).toBe(false);
    expect(isUnavailableFailure(Object.assign(new Error('x'), { code: '503' }))).toBe(false);
    expect(isUnavailableFailure(new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' }))).toBe(false);
    // The platform's own TimeoutError (AbortSignal.timeout) is not a bus time-out.
    expect(isUnavailableFailure(new DOMException('The operation timed out.', 'TimeoutError'))).toBe(false);
    expect(isUnavailableFailure(Object.assign(new Error('connection closed'), { name: 'ConnectionError' }))).toBe(false);
    expect(isUnavailableFailure(undefined)).toBe(false);
    expect(isUnavailableFailure('ECONNREFUSED')).toBe(false);
  });

  test('unavailability is logged at most once per 10 s, with the count left out', async () => {
    const t0 = Date.now();
    const now = jest.spyOn(Date, 'now').mockReturnValue(t0 + 60_000);
    try {
      failWith = () => pgConnectionError('ECONNREFUSED');
      const admin = network.client(AdminService, server.url);
      for (let i = 0; i < 3; i++) await admin.migrate({}).catch(() => undefined);
      expect(logged('rpc.failure.unavailable')).toHaveLength(1);
      now.mockReturnValue(t0 + 71_000);
      await admin.migrate({}).catch(() => undefined);
      const warned = logged('rpc.failure.unavailable');
      expect(warned).toHaveLength(2);
      expect(warned[1]).toMatchObject({ level: 'warn', failures_not_logged: 2 });
    } finally {
      now.mockRestore();
    }
  });
});
