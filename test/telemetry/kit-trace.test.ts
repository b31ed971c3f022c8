/**
 * Trace propagation through the kit's pieces, in this process with an in-memory span
 * exporter: a gateway-like SERVER span → the Connect client interceptor (CLIENT span,
 * `traceparent` sent) → the Connect server interceptor (SERVER span continuing it) →
 * appendToOutbox inside the handler (the event's headers capture the trace context) →
 * the in-process bus → the consumer's CONSUMER span (parent from the header) → an
 * egress request (CLIENT span), as a webhook delivery or photo fetch makes.
 *
 * The outbox's SQL is a stand-in capturing the insert (Jest cannot host PGlite in
 * process); the system-level trace through a real database is in telemetry.test.ts.
 */
import { credentialInterceptor } from '../support/credentials';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import type { ReceivedEvent } from '../../services/kit/events';
import { createMemoryBus } from '../../services/kit/events';
import type { Sql } from '../../services/kit/db';
import { guardedRequest, PHOTO_URL_RULES } from '../../services/kit/egress';
import { HealthState } from '../../services/kit/rpc';
import { InternalClients } from '../../services/kit/rpc';
import { startInternalServer, type InternalServer } from '../../services/kit/rpc';
import { createLogger } from '../../services/kit/base';
import { appendToOutbox, type OutboxEvent } from '../../services/kit/events';
import { inSpan, startTelemetry, type Telemetry } from '../../services/kit/telemetry';

const log = createLogger({ level: 'silent', name: 'kit-trace-test' });
const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let server: InternalServer;
let target: http.Server;
let targetPort: number;
const clients = new InternalClients([credentialInterceptor()]);
const bus = createMemoryBus({ log });

/** What appendToOutbox inserted, from a stand-in for the postgres.js tag. */
const appended: OutboxEvent[] = [];
const fakeSql = Object.assign(
  (strings: TemplateStringsArray | string, ...values: unknown[]) => {
    if (typeof strings === 'string') return strings; // sql(identifier)
    const [, id, subject, data, headers] = values as [string, string, string, Buffer, Record<string, string>];
    appended.push({ id, subject, data, headers });
    return Promise.resolve([]);
  },
  { json: (v: unknown) => v },
) as unknown as Sql;

beforeAll(async () => {
  telemetry = await startTelemetry({ name: 'test', host: '127.0.0.1', metricsPort: 0, log, env: {}, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  target = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  targetPort = (target.address() as AddressInfo).port;
  server = await startInternalServer({
    host: '127.0.0.1',
    port: 0,
    log,
    health: new HealthState(),
    routes(router) {
      router.service(AdminService, {
        async migrate() {
          await appendToOutbox(fakeSql, 'calendar', { subject: 'calendar.test.happened', data: new Uint8Array([1]), headers: { workspace_id: 'ws1' } });
          return { migrated: true, schemas: [] };
        },
      });
    },
  });
});

afterAll(async () => {
  clients.close();
  await bus.close();
  await server?.close(100);
  await new Promise<void>((r) => target?.close(() => r()));
  await telemetry?.shutdown();
});

test('one trace from a gateway span through Connect, the outbox and the bus to an egress request', async () => {
  await inSpan('PUT /v1/test', { kind: SpanKind.SERVER }, () => clients.client(AdminService, server.url).migrate({}));

  expect(appended).toHaveLength(1);
  const event = appended[0]!;
  expect(event.headers).toMatchObject({ workspace_id: 'ws1', traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/) });

  // The relay's part: the row goes to the bus as it is.
  const consumed = new Promise<void>((resolve, reject) => {
    void bus.subscribe({
      durable: 'test-consumer',
      subjects: ['calendar.>'],
      handler: async (_e: ReceivedEvent) => {
        try {
          const res = await guardedRequest(`http://target.test:${targetPort}/hook`, {
            rules: PHOTO_URL_RULES,
            allowCidrs: ['127.0.0.0/8'],
            resolver: async () => [{ address: '127.0.0.1', family: 4 }],
          });
          expect(res.status).toBe(200);
          resolve();
        } catch (err) {
          reject(err);
        }
      },
    });
  });
  await bus.publish({ id: event.id!, subject: event.subject, data: event.data, headers: event.headers });
  await consumed;
  await new Promise((r) => setTimeout(r, 50)); // the consumer span ends after the handler returns

  const spans = exporter.getFinishedSpans();
  const find = (name: string, kind: SpanKind) => {
    const s = spans.find((x) => x.name === name && x.kind === kind);
    if (!s) throw new Error(`no ${SpanKind[kind]} span "${name}" among ${spans.map((x) => `${SpanKind[x.kind]} ${x.name}`).join(', ')}`);
    return s;
  };
  const gateway = find('PUT /v1/test', SpanKind.SERVER);
  const client = find('psync.admin.v1.AdminService/Migrate', SpanKind.CLIENT);
  const rpc = find('psync.admin.v1.AdminService/Migrate', SpanKind.SERVER);
  const consumer = find('process calendar.test.happened', SpanKind.CONSUMER);
  const egress = find('GET egress', SpanKind.CLIENT);

  const traceId = gateway.spanContext().traceId;
  for (const s of [client, rpc, consumer, egress]) expect(s.spanContext().traceId).toBe(traceId);
  expect(client.parentSpanContext?.spanId).toBe(gateway.spanContext().spanId);
  expect(rpc.parentSpanContext?.spanId).toBe(client.spanContext().spanId);
  expect(event.headers!.traceparent).toContain(rpc.spanContext().spanId);
  expect(consumer.parentSpanContext?.spanId).toBe(rpc.spanContext().spanId);
  expect(egress.parentSpanContext?.spanId).toBe(consumer.spanContext().spanId);
  expect(egress.attributes).toMatchObject({ 'server.address': 'target.test', 'http.response.status_code': 200 });
  expect(consumer.attributes).toMatchObject({ 'messaging.consumer.group.name': 'test-consumer', 'psync.delivery_count': 1 });
});

test('a failed egress request marks its span failed with the egress error kind', async () => {
  await expect(guardedRequest('http://127.0.0.1/x', { rules: PHOTO_URL_RULES })).rejects.toThrow();
  const span = exporter.getFinishedSpans().find((s) => s.attributes['error.type'] === 'forbidden_url/ip_literal');
  expect(span?.status.code).toBe(2); // SpanStatusCode.ERROR
});
