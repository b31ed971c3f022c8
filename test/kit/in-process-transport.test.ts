/**
 * The in-process transport (services/kit/rpc/in-process-transport.ts) against the real
 * internal server hosting the same implementation: a co-located call must look to its
 * caller exactly like the h2c call — result, errors, metadata, deadline, cancellation,
 * interceptors and trace context — and streaming calls keep using the network.
 */
import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { Health, HealthCheckResponse_ServingStatus } from '../../gen/grpc/health/v1/health_pb';
import { HealthState } from '../../services/kit/rpc';
import { InProcessServices } from '../../services/kit/rpc';
import { InternalClients } from '../../services/kit/rpc';
import { serverTracingInterceptor, startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { createLogger } from '../../services/kit/base';
import { inSpan, startTelemetry, type Telemetry } from '../../services/kit/telemetry';

const log = createLogger({ level: 'silent', name: 'in-process-test' });
const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let server: InternalServer;

/** What the next Migrate call does; the same implementation serves both transports. */
let behaviour: 'ok' | 'connect-error' | 'plain-error' | 'hang' = 'ok';
/** What the handler saw: its request headers and whether its signal was aborted. */
const seen: { traceparent: string | null; custom: string | null; signal?: AbortSignal }[] = [];
/** Interceptor order, client and server side. */
const order: string[] = [];
const tag =
  (name: string): Interceptor =>
  (next) =>
  async (req) => {
    order.push(name);
    return next(req);
  };

const health = new HealthState();
const inProcess = new InProcessServices();
const network = new InternalClients([tag('client')], 5000);
const local = new InternalClients([tag('client')], 5000);

beforeAll(async () => {
  telemetry = await startTelemetry({ name: 'test', host: '127.0.0.1', metricsPort: 0, log, env: {}, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  health.declare('psync.admin.v1.AdminService');
  health.setReady('psync.admin.v1.AdminService');
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health,
    interceptors: [tag('server')],
    routes(networkRouter) {
      const router = inProcess.recording(networkRouter);
      router.service(AdminService, {
        async migrate(req, ctx) {
          seen.push({ traceparent: ctx.requestHeader.get('traceparent'), custom: ctx.requestHeader.get('x-test'), signal: ctx.signal });
          switch (behaviour) {
            case 'connect-error':
              throw new ConnectError('listing is locked', Code.FailedPrecondition, { 'x-reason': 'locked' });
            case 'plain-error':
              throw new Error('boom');
            case 'hang':
              return new Promise<never>(() => {});
            default:
              return { migrated: true, schemas: ['identity', 'calendar'] };
          }
        },
      });
    },
  });
  local.useInProcess(server.url, inProcess, [serverTracingInterceptor, tag('server')]);
});

afterAll(async () => {
  network.close();
  local.close();
  await server?.close(100);
  await telemetry?.shutdown();
});

beforeEach(() => {
  behaviour = 'ok';
  seen.length = 0;
  order.length = 0;
  exporter.reset();
});

async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await p };
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: Code[e.code], message: e.rawMessage, reason: e.metadata.get('x-reason') };
  }
}

const both = () =>
  [
    ['h2c', network.client(AdminService, server.url)],
    ['in-process', local.client(AdminService, server.url)],
  ] as const;

test('answers exactly as the network call does, and the handler sees the request headers', async () => {
  const results = [];
  for (const [, c] of both()) results.push(await c.migrate({}, { headers: { 'x-test': 'yes' } }));
  expect(results[1]).toEqual(results[0]);
  expect(results[1]).toMatchObject({ migrated: true, schemas: ['identity', 'calendar'] });
  expect(seen.map((s) => s.custom)).toEqual(['yes', 'yes']);
});

test('a ConnectError keeps its code, message and metadata; any other error is Internal', async () => {
  for (const b of ['connect-error', 'plain-error'] as const) {
    behaviour = b;
    const [viaNetwork, viaLocal] = [await outcome(both()[0][1].migrate({})), await outcome(both()[1][1].migrate({}))];
    expect(viaLocal).toEqual(viaNetwork);
  }
  behaviour = 'connect-error';
  expect(await outcome(local.client(AdminService, server.url).migrate({}))).toEqual({ code: 'FailedPrecondition', message: 'listing is locked', reason: 'locked' });
  behaviour = 'plain-error';
  expect(await outcome(local.client(AdminService, server.url).migrate({}))).toMatchObject({ code: 'Internal' });
});

test('the deadline ends a call whose handler never answers, and the handler is told', async () => {
  behaviour = 'hang';
  const started = Date.now();
  expect(await outcome(local.client(AdminService, server.url).migrate({}, { timeoutMs: 150 }))).toMatchObject({ code: 'DeadlineExceeded' });
  expect(Date.now() - started).toBeLessThan(2000);
  expect(seen[0]!.signal!.aborted).toBe(true);
});

test("the caller's abort signal cancels the call", async () => {
  behaviour = 'hang';
  const ac = new AbortController();
  const call = outcome(local.client(AdminService, server.url).migrate({}, { signal: ac.signal }));
  setTimeout(() => ac.abort(), 50);
  expect(await call).toMatchObject({ code: 'Canceled' });
  expect(seen[0]!.signal!.aborted).toBe(true);
});

test('client interceptors run before server interceptors, and the trace is the same shape as over h2c', async () => {
  await inSpan('PUT /v1/test', { kind: SpanKind.SERVER }, () => local.client(AdminService, server.url).migrate({}));
  expect(order).toEqual(['client', 'server']);
  const spans = exporter.getFinishedSpans();
  const root = spans.find((s) => s.name === 'PUT /v1/test')!;
  const client = spans.find((s) => s.kind === SpanKind.CLIENT && s.name === 'psync.admin.v1.AdminService/Migrate')!;
  const srv = spans.find((s) => s.kind === SpanKind.SERVER && s.name === 'psync.admin.v1.AdminService/Migrate')!;
  expect(client.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
  expect(srv.spanContext().traceId).toBe(root.spanContext().traceId);
  expect(srv.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
  expect(seen[0]!.traceparent).toContain(client.spanContext().spanId);
});

test('services not registered in process (health) and other base URLs use the network', async () => {
  // Health is registered by the server itself, not through the recording router.
  expect(inProcess.has(Health)).toBe(false);
  const res = await local.client(Health, server.url).check({ service: 'psync.admin.v1.AdminService' });
  expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
  // A streaming call goes through the network transport even for a local service URL.
  const ac = new AbortController();
  const stream = local.client(Health, server.url).watch({ service: 'psync.admin.v1.AdminService' }, { signal: ac.signal });
  for await (const update of stream) {
    expect(update.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    break;
  }
  ac.abort();
  // A URL other than this process's own server is never short-circuited.
  const other = await outcome(local.client(AdminService, 'http://127.0.0.1:1').migrate({}, { timeoutMs: 2000 }));
  expect(other).not.toHaveProperty('ok'); // connection refused: nothing listens on port 1
  expect(seen).toHaveLength(0);
});
