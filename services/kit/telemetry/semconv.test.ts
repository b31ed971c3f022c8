/**
 * The old names the semantic conventions replace are kept for one release unless
 * OTEL_SEMCONV_STABILITY_OPT_IN opts into the stable conventions alone (semconv.ts).
 */
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { bindMeterProvider, recordHttpRequest } from './metrics';
import { errorType, legacySeries, rpcSpanAttributes } from './semconv';

test('OTEL_SEMCONV_STABILITY_OPT_IN: http or rpc drops the old form, …/dup or nothing keeps both', () => {
  expect(legacySeries({})).toEqual({ http: true, rpc: true });
  expect(legacySeries({ OTEL_SEMCONV_STABILITY_OPT_IN: 'http' })).toEqual({ http: false, rpc: true });
  expect(legacySeries({ OTEL_SEMCONV_STABILITY_OPT_IN: ' rpc , http/dup,database' })).toEqual({ http: true, rpc: false });
  expect(legacySeries({ OTEL_SEMCONV_STABILITY_OPT_IN: 'http,http/dup' })).toEqual({ http: true, rpc: true });
});

test('error.type is a code or a class name, never a message', () => {
  expect(errorType(Object.assign(new Error('duplicate key value (guest Ana)'), { code: '23505' }))).toBe('23505');
  expect(errorType(new TypeError('x'))).toBe('TypeError');
  expect(errorType('boom')).toBe('_OTHER');
  expect(errorType({ code: 'x'.repeat(100) })).toBe('_OTHER');
});

async function namesRecorded(optIn: string | undefined): Promise<string[]> {
  const saved = process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
  if (optIn === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
  else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = optIn;
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const unbind = bindMeterProvider(provider);
  try {
    recordHttpRequest('GET', { label: 'GET /v1/blocks', template: '/v1/blocks' }, 200, 'https', 0.004);
    await reader.forceFlush();
    return exporter
      .getMetrics()
      .flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics))
      .filter((m) => m.dataPoints.length > 0)
      .map((m) => m.descriptor.name);
  } finally {
    unbind();
    await provider.shutdown();
    if (saved === undefined) delete process.env.OTEL_SEMCONV_STABILITY_OPT_IN;
    else process.env.OTEL_SEMCONV_STABILITY_OPT_IN = saved;
  }
}

test('a gateway request is http.server.request.duration, and psync_http_* too unless opted out', async () => {
  expect(await namesRecorded(undefined)).toEqual(expect.arrayContaining(['http.server.request.duration', 'psync_http_requests_total', 'psync_http_request_duration_seconds']));
  const stable = await namesRecorded('http');
  expect(stable).toContain('http.server.request.duration');
  expect(stable).not.toContain('psync_http_requests_total');
  expect(stable).not.toContain('psync_http_request_duration_seconds');
});

test('RPC spans carry rpc.system.name and the fully-qualified rpc.method, with the old attributes while kept', () => {
  expect(rpcSpanAttributes('psync.calendar.v1.CalendarService', 'PutBlock')).toEqual({
    'rpc.system.name': 'connectrpc',
    'rpc.method': 'psync.calendar.v1.CalendarService/PutBlock',
    'rpc.system': 'connect_rpc',
    'rpc.service': 'psync.calendar.v1.CalendarService',
  });
});
