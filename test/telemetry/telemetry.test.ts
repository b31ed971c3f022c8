/**
 * Metrics and traces of the real system (main.ts, as an operator starts it).
 *
 * - Metrics: real traffic (a token exchange, a contract PUT /v1/blocks, requests until
 *   a 429 with a quota of 3), then a scrape of /metrics on METRICS_PORT finds the
 *   names the chart's alerts and dashboard query.
 * - Traces: with PSYNC_TRACE_EXPORT_FILE the process writes every finished span as a
 *   JSON line (the debugging aid of services/kit/telemetry/telemetry.ts); one PUT /v1/blocks
 *   shows gateway → IdentityService/Authorize → CalendarService/PutBlock as one trace,
 *   client and server span of each hop linked, and the trace id in the access log.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientsFor, type Clients } from '../calendar/support';
import { send, jsonRequest } from '../gateway/http-client';
import { Partners, type Partner } from '../gateway/partners';
import { validBlock } from '../gateway/fixtures';
import { INTAKE_CONSUMER } from '../../services/notifications/intake';
import { freePort, logEvents, startSystem, stopAllSystems, type RunningSystem } from '../support/system';

jest.setTimeout(120_000);

const QUOTA = 3;

interface SpanLine {
  service: string;
  name: string;
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  attributes: Record<string, unknown>;
}

let system: RunningSystem;
let metricsPort: number;
let traceDir: string;
let traceFile: string;
let partners: Partners;
let clients: Clients;
let partner: Partner;
let putRequestId: string;
let putStatus: number;

beforeAll(async () => {
  metricsPort = await freePort();
  traceDir = mkdtempSync(join(tmpdir(), 'psync-traces-'));
  traceFile = join(traceDir, 'spans.jsonl');
  system = await startSystem({
    env: { METRICS_PORT: String(metricsPort), RATE_LIMIT_PER_HOUR: String(QUOTA), PSYNC_TRACE_EXPORT_FILE: traceFile },
  });
  partners = new Partners(system);
  clients = clientsFor(system.internalUrl);

  // Real traffic: a token exchange, a contract request, then requests until a 429.
  partner = await partners.partner();
  const listing = await clients.catalog.createListing({ workspaceId: partner.workspaceId });
  const put = await send(system.gatewayUrl, jsonRequest('PUT', '/v1/blocks/telemetry-b1', { ...validBlock(), listing_id: listing.listing!.listingId }, partner.auth));
  putStatus = put.status;
  putRequestId = put.headers['x-request-id'] as string;
  for (let i = 0; i < QUOTA + 5; i++) {
    const res = await send(system.gatewayUrl, { method: 'GET', path: '/v1/blocks', headers: partner.auth });
    if (res.status === 429) break;
  }
}, 180_000);

afterAll(async () => {
  partners?.close();
  clients?.close();
  await stopAllSystems();
  if (traceDir) rmSync(traceDir, { recursive: true, force: true });
});

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** Samples of `name` (exact series name) as [labels, value]. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ labels, value: Number(m[3]) });
  }
  return out;
}

describe('metrics on METRICS_PORT /metrics', () => {
  test('the contract request answered, and a 429 came', () => {
    expect([200, 201]).toContain(putStatus);
  });

  test('requests by route template and code, with a latency histogram', async () => {
    const text = await scrape();
    const reqs = samples(text, 'psync_http_requests_total');
    expect(reqs).toEqual(
      expect.arrayContaining([
        { labels: expect.objectContaining({ route: 'POST /v1/token', code: '200' }), value: expect.any(Number) },
        { labels: expect.objectContaining({ route: 'PUT /v1/blocks/:external_uid', code: String(putStatus) }), value: 1 },
        { labels: expect.objectContaining({ route: 'GET /v1/blocks', code: '429' }), value: expect.any(Number) },
      ]),
    );
    const buckets = samples(text, 'psync_http_request_duration_seconds_bucket');
    expect(buckets.some((b) => b.labels.route === 'PUT /v1/blocks/:external_uid' && b.labels.le === '+Inf' && b.value === 1)).toBe(true);
    expect(samples(text, 'psync_http_request_duration_seconds_count').length).toBeGreaterThan(0);
    // Never the raw path: no label carries the external uid.
    expect(text).not.toContain('telemetry-b1');
  });

  test('the semantic conventions: HTTP server, RPC server and client, database and messaging durations', async () => {
    const text = await scrape();
    const http = samples(text, 'http_server_request_duration_count');
    expect(http).toEqual(
      expect.arrayContaining([
        {
          labels: expect.objectContaining({ http_request_method: 'PUT', http_route: '/v1/blocks/:external_uid', http_response_status_code: String(putStatus), url_scheme: 'http' }),
          value: 1,
        },
        { labels: expect.objectContaining({ http_request_method: 'GET', http_route: '/v1/blocks', http_response_status_code: '429' }), value: expect.any(Number) },
      ]),
    );
    for (const side of ['server', 'client']) {
      const rpc = samples(text, `rpc_${side}_call_duration_count`);
      expect(rpc).toEqual(
        expect.arrayContaining([
          {
            labels: expect.objectContaining({ rpc_system_name: 'connectrpc', rpc_method: 'psync.calendar.v1.CalendarService/PutBlock', rpc_response_status_code: 'ok' }),
            value: expect.any(Number),
          },
        ]),
      );
    }
    const db = samples(text, 'db_client_operation_duration_count');
    expect(db.some((s) => s.labels.db_system_name === 'postgresql' && s.labels.db_operation_name && s.value > 0)).toBe(true);
    const published = samples(text, 'messaging_client_sent_messages_total');
    expect(published.some((s) => s.labels.messaging_system && s.labels.messaging_destination_name && s.value > 0)).toBe(true);
    // Never the raw path or a statement's values in a label.
    expect(text).not.toContain('telemetry-b1');
  });

  test('rate-limit refusals, tokens issued, outbox lag and pending per schema, abandoned deliveries', async () => {
    const text = await scrape();
    expect(samples(text, 'psync_rate_limit_refusals_total')[0]?.value).toBeGreaterThanOrEqual(1);
    expect(samples(text, 'psync_tokens_issued_total')[0]?.value).toBeGreaterThanOrEqual(1);
    // Present from start-up at 0 so the alert's increase() has a series.
    expect(samples(text, 'psync_webhook_deliveries_abandoned_total')).toHaveLength(1);
    for (const name of ['psync_outbox_lag_seconds', 'psync_outbox_pending']) {
      const schemas = samples(text, name)
        .map((s) => s.labels.schema)
        .sort();
      expect(schemas).toEqual(expect.arrayContaining(['calendar', 'catalog', 'identity', 'notifications']));
      for (const s of samples(text, name)) expect(s.value).toBeGreaterThanOrEqual(0);
    }
  });

  test("the NATS consumer's unacknowledged events and presence, and whether the bus signs in, on NATS only (the in-process bus has no stream)", async () => {
    const text = await scrape();
    const pending = samples(text, 'psync_bus_consumer_pending');
    if (!process.env.NATS_URL) {
      for (const name of ['psync_bus_consumer_pending', 'psync_bus_consumer_up', 'psync_bus_anonymous']) expect({ name, found: samples(text, name) }).toEqual({ name, found: [] });
      return;
    }
    expect(pending.map((p) => p.labels.durable)).toEqual([INTAKE_CONSUMER]);
    expect(pending[0]!.value).toBeGreaterThanOrEqual(0);
    expect(samples(text, 'psync_bus_consumer_up').map((p) => [p.labels.durable, p.value])).toEqual([[INTAKE_CONSUMER, 1]]);
    // The test's NATS is on loopback: anonymous there is a development server, not a finding.
    expect(samples(text, 'psync_bus_anonymous').map((p) => p.value)).toEqual([0]);
  });

  test('anything but GET /metrics is 404', async () => {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/other`);
    expect(res.status).toBe(404);
  });
});

describe('traces (PSYNC_TRACE_EXPORT_FILE)', () => {
  async function spans(until: (all: SpanLine[]) => boolean, timeoutMs = 5000): Promise<SpanLine[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const all = existsSync(traceFile)
        ? readFileSync(traceFile, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as SpanLine)
        : [];
      if (until(all) || Date.now() > deadline) return all;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  test('one PUT /v1/blocks: gateway → identity Authorize → calendar PutBlock in one trace', async () => {
    const isGateway = (s: SpanLine) => s.kind === 'SERVER' && s.attributes['psync.request_id'] === putRequestId;
    const all = await spans((a) => a.some(isGateway));
    const gateway = all.find(isGateway);
    expect(gateway).toMatchObject({ name: 'PUT /v1/blocks/:external_uid', parentSpanId: null });
    expect(gateway!.attributes).toMatchObject({ 'http.route': '/v1/blocks/:external_uid', 'http.response.status_code': putStatus });
    const trace = all.filter((s) => s.traceId === gateway!.traceId);

    for (const rpc of ['psync.identity.v1.IdentityService/Authorize', 'psync.calendar.v1.CalendarService/PutBlock']) {
      const client = trace.find((s) => s.kind === 'CLIENT' && s.name === rpc);
      const server = trace.find((s) => s.kind === 'SERVER' && s.name === rpc);
      expect({ rpc, client: client?.parentSpanId, server: server?.parentSpanId }).toEqual({
        rpc,
        client: gateway!.spanId,
        server: client?.spanId,
      });
    }

    // Whatever the calendar appended to its outbox carries the trace on to the consumers.
    for (const consumer of trace.filter((s) => s.kind === 'CONSUMER')) {
      expect(trace.map((s) => s.spanId)).toContain(consumer.parentSpanId);
    }

    // The access log line carries the trace id.
    const line = logEvents(system.logs(), 'http.request').find((l) => l.request_id === putRequestId);
    expect(line?.trace_id).toBe(gateway!.traceId);
  });

  test('the token exchange is traced too, and health checks are not', async () => {
    const all = await spans(() => true);
    expect(all.some((s) => s.name === 'POST /v1/token' && s.kind === 'SERVER')).toBe(true);
    expect(all.some((s) => s.name === 'psync.identity.v1.IdentityService/ExchangeToken' && s.kind === 'SERVER')).toBe(true);
    expect(all.some((s) => s.name.startsWith('grpc.health.v1.Health'))).toBe(false);
  });
});
