/**
 * Telemetry by the OpenTelemetry environment (services/kit/telemetry/otel-env.ts; docs/operations.md
 * "Telemetry"): the system started with the variables the chart sets — OTEL_SERVICE_NAME,
 * OTEL_RESOURCE_ATTRIBUTES with the pod, namespace and version, OTEL_EXPORTER_OTLP_PROTOCOL,
 * OTEL_EXPORTER_OTLP_ENDPOINT — and OTEL_METRICS_EXPORTER=otlp sends its spans and its
 * metrics to a real OTLP receiver (test/support/otlp-receiver.ts) in each protocol:
 * `grpc`, `http/protobuf`, `http/json`, each export carrying the resource as set.
 *
 * In split mode (real PostgreSQL and NATS) each process exports under its own role's
 * service.name, and one partner request's spans link gateway → identity and gateway →
 * calendar across the processes: one trace id, each server span's parent the caller's
 * client span.
 */
import { randomBytes } from 'node:crypto';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { InternalClients } from '../../services/kit/rpc';
import { OTLP_PROTOCOLS, type OtlpProtocol } from '../../services/kit/telemetry';
import { validBlock } from '../gateway/fixtures';
import { jsonRequest, send } from '../gateway/http-client';
import { credentialInterceptor } from '../support/credentials';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedExport } from '../support/otlp-receiver';
import { canSplit, startSplitSystem } from '../support/split-system';
import { startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { eventually } from '../notifications/support/harness';

jest.setTimeout(180_000);

const RESOURCE = { 'k8s.pod.name': 'pod-x', 'k8s.namespace.name': 'ns-y', 'service.version': '9.9.9' };

/** The variables the chart sets, pointed at `receiver`, with short export intervals. */
function otelEnv(receiver: OtlpReceiver, protocol: OtlpProtocol, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_RESOURCE_ATTRIBUTES: Object.entries(RESOURCE)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    OTEL_METRICS_EXPORTER: 'otlp',
    OTEL_METRIC_EXPORT_INTERVAL: '500',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...extra,
  };
}

/** A sandbox partner's token, through the internal API at `internalUrl` and the gateway at `gatewayUrl`. */
async function partnerToken(internalUrl: string, gatewayUrl: string): Promise<{ workspaceId: string; auth: Record<string, string>; clients: InternalClients }> {
  const clients = new InternalClients([credentialInterceptor()], 15_000);
  const identity = clients.client(IdentityService, internalUrl);
  const ws = await identity.createWorkspace({ name: `otlp-${randomBytes(3).toString('hex')}`, environment: Environment.SANDBOX });
  const key = await identity.issueKey({ workspaceId: ws.workspace!.workspaceId });
  const res = await send(gatewayUrl, { method: 'POST', path: '/v1/token', headers: { Authorization: `Bearer ${key.apiKey}` } });
  expect(res.status).toBe(200);
  return { workspaceId: ws.workspace!.workspaceId, auth: { Authorization: `Bearer ${res.json.access_token as string}` }, clients };
}

afterAll(async () => stopAllSystems());

describe.each(OTLP_PROTOCOLS)('OTEL_EXPORTER_OTLP_PROTOCOL=%s', (protocol) => {
  let receiver: OtlpReceiver;
  let system: RunningSystem;
  beforeAll(async () => {
    receiver = await startOtlpReceiver(protocol);
    system = await startSystem({ env: otelEnv(receiver, protocol, { OTEL_SERVICE_NAME: 'psync-gateway' }) });
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  test('spans and metrics arrive in that protocol, with the resource the environment sets', async () => {
    const { clients } = await partnerToken(system.internalUrl, system.gatewayUrl);
    clients.close();
    const traces = await eventually(
      async () => {
        const t = receiver.received.filter((r) => r.signal === 'traces' && r.spans.some((s) => s.name.includes('IdentityService')));
        return t.length > 0 && t;
      },
      30_000,
      'spans of the token exchange',
    );
    // Exported every 500 ms: wait for an export taken after the request was counted.
    const metrics = await eventually(
      async () => {
        const m = receiver.received.filter((r) => r.signal === 'metrics' && r.metrics.includes('psync_http_requests_total'));
        return m.length > 0 && m;
      },
      30_000,
      'a metrics export with psync_http_requests_total',
    );
    for (const r of [...traces, ...metrics]) {
      expect(r.protocol).toBe(protocol);
      expect(r.resource).toMatchObject({ 'service.name': 'psync-gateway', ...RESOURCE, 'telemetry.sdk.language': 'nodejs' });
    }
    const expectedType = { grpc: 'application/grpc', 'http/protobuf': 'application/x-protobuf', 'http/json': 'application/json' }[protocol];
    expect(traces[0]!.contentType).toContain(expectedType);
  });
});

test('a bad OTEL_EXPORTER_OTLP_PROTOCOL stops start-up with one line naming it', async () => {
  await expect(startSystem({ env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' }, timeoutMs: 30_000 })).rejects.toThrow(
    /OTEL_EXPORTER_OTLP_PROTOCOL=thrift is not one of grpc, http\/protobuf, http\/json/,
  );
});

(canSplit ? test : test.skip)('split mode: one partner request is one trace across the gateway, identity and calendar processes and the calendar database', async () => {
  const receiver = await startOtlpReceiver('http/protobuf');
  const split = await startSplitSystem(otelEnv(receiver, 'http/protobuf'));
  try {
    const p = await partnerToken(split.urls.identity, split.gateway.gatewayUrl);
    const listing = await p.clients.client(CatalogService, split.urls.catalog).createListing({ workspaceId: p.workspaceId });
    p.clients.close();
    const put = await send(split.gateway.gatewayUrl, jsonRequest('PUT', '/v1/blocks/otlp-split-1', { ...validBlock(), listing_id: listing.listing!.listingId }, p.auth));
    expect(put.status).toBe(200);
    type Located = ReceivedExport['spans'][number] & { service: string };
    const spans = (): Located[] => receiver.received.filter((r) => r.signal === 'traces').flatMap((r) => r.spans.map((s) => ({ ...s, service: r.resource['service.name']! })));
    const putBlock = await eventually(async () => spans().find((s) => s.service === 'psync-calendar' && s.name.endsWith('CalendarService/PutBlock')), 30_000, 'the calendar span');
    const trace = await eventually(
      async () => {
        const t = spans().filter((s) => s.traceId === putBlock.traceId);
        return t.some((s) => s.service === 'psync-identity') && t.some((s) => s.service === 'psync-gateway') && t;
      },
      30_000,
      'the gateway and identity spans of that trace',
    );
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    // The calendar's server span continues the gateway's client span; so does identity's Authorize.
    expect(byId.get(putBlock.parentSpanId)?.service).toBe('psync-gateway');
    const authorize = trace.find((s) => s.service === 'psync-identity' && s.name.includes('IdentityService/Authorize'));
    expect(byId.get(authorize!.parentSpanId)?.service).toBe('psync-gateway');
    // The calendar's statements are CLIENT spans under its PutBlock span (services/kit/db/sql-telemetry.ts: `<OPERATION> <database>`).
    const statements = await eventually(
      async () => {
        const t = spans().filter((s) => s.traceId === putBlock.traceId && s.parentSpanId === putBlock.spanId && /^(SELECT|INSERT|UPDATE|DELETE|WITH|CALL) \S+$/.test(s.name));
        return t.length > 0 && t;
      },
      30_000,
      'the database spans of PutBlock',
    );
    expect(statements.every((s) => s.service === 'psync-calendar')).toBe(true);
    expect(Object.fromEntries(receiver.received.filter((r) => r.signal === 'traces').map((r) => [r.resource['service.name'], r.resource['k8s.pod.name']]))).toMatchObject({
      'psync-gateway': 'pod-x',
      'psync-calendar': 'pod-x',
      'psync-identity': 'pod-x',
    });
  } finally {
    await split.stop();
    await receiver.close();
  }
});
