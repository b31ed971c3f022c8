/**
 * A process that exports no spans (no OTLP endpoint, no trace file) records none
 * (AlwaysOff), yet trace context still flows: a request from the network gets its own
 * trace and span ids (logs carry the trace id, `traceparent` goes on with flag 00), and
 * spans nested inside it — the kit's CLIENT span, the SERVER span of a call served in
 * process — run under the enclosing span instead of minting ids nobody records
 * (services/kit/telemetry/telemetry.ts `inSpan`).
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { createLogger } from '../../services/kit/base';
import { contextFromHeaders, currentTraceHeaders, inSpan, startTelemetry, type Telemetry } from '../../services/kit/telemetry';

const log = createLogger({ level: 'silent', name: 'unrecorded-spans-test' });
let telemetry: Telemetry;

beforeAll(async () => {
  telemetry = await startTelemetry({ name: 'test', host: '127.0.0.1', metricsPort: 0, log, env: {} });
});
afterAll(async () => telemetry.shutdown());

const ids = () => {
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc ? { traceId: sc.traceId, spanId: sc.spanId } : undefined;
};

test('a new root gets fresh ids; a nested span and an in-process SERVER span continue it; traceparent goes on unsampled', async () => {
  const seen = await inSpan('GET', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async (root) => {
    expect(root.isRecording()).toBe(false);
    const outer = ids()!;
    expect(outer.traceId).toMatch(/^[0-9a-f]{32}$/);
    const nested = await inSpan('client', { kind: SpanKind.CLIENT }, async () => {
      const headers = currentTraceHeaders();
      // In process: the SERVER span's parent, from the headers, is the span the call already runs in.
      const served = await inSpan('server', { kind: SpanKind.SERVER, parent: contextFromHeaders(headers) }, async () => ids());
      return { here: ids(), headers, served };
    });
    return { outer, nested };
  });
  expect(seen.nested.here).toEqual(seen.outer);
  expect(seen.nested.served).toEqual(seen.outer);
  expect(seen.nested.headers.traceparent).toBe(`00-${seen.outer.traceId}-${seen.outer.spanId}-00`);
});

test('a SERVER span whose parent came from elsewhere (the network) gets its own span in that trace', async () => {
  const remote = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
  const parent = propagation.extract(ROOT_CONTEXT, { traceparent: remote });
  const inner = await inSpan('GET', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, () => inSpan('server', { kind: SpanKind.SERVER, parent }, async () => ids()));
  expect(inner!.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
  expect(inner!.spanId).not.toBe('b7ad6b7169203331');
  expect(inner!.spanId).toMatch(/^[0-9a-f]{16}$/);
});

test('two requests get two traces', async () => {
  const a = await inSpan('GET', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async () => ids());
  const b = await inSpan('GET', { kind: SpanKind.SERVER, parent: ROOT_CONTEXT }, async () => ids());
  expect(a!.traceId).not.toBe(b!.traceId);
});
