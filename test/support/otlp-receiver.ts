/**
 * A real OTLP receiver for tests, in each protocol the OpenTelemetry specification
 * names: OTLP/gRPC (a @grpc/grpc-js server serving TraceService/Export and
 * MetricsService/Export), OTLP/HTTP with protobuf and OTLP/HTTP with JSON (POST
 * /v1/traces, /v1/metrics). No collector is installable on these machines, and the
 * OTLP packages carry serializers for the client side only, so the protobuf bodies are
 * read here with a small protobuf wire-format reader over the fields the tests check
 * (opentelemetry/proto/collector/{trace,metrics}/v1 and common/v1):
 * ExportTraceServiceRequest.resource_spans (1) → ResourceSpans.resource (1) →
 * Resource.attributes (1) → KeyValue {key (1), value (2) → AnyValue.string_value (1)},
 * ResourceSpans.scope_spans (2) → ScopeSpans.spans (2) → Span {trace_id (1), span_id
 * (2), parent_span_id (4), name (5)}; ExportMetricsServiceRequest.resource_metrics (1)
 * → ResourceMetrics.resource (1), scope_metrics (2) → ScopeMetrics.metrics (2) →
 * Metric.name (1).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { OtlpProtocol } from '../../services/kit/telemetry';

/** One span as received. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

/** One export request as received: its transport, its resource and what it carried. */
export interface ReceivedExport {
  signal: 'traces' | 'metrics';
  protocol: OtlpProtocol;
  contentType: string;
  resource: Record<string, string>;
  spans: ReceivedSpan[];
  metrics: string[];
}

export interface OtlpReceiver {
  /** The endpoint to set as OTEL_EXPORTER_OTLP_ENDPOINT. */
  endpoint: string;
  received: ReceivedExport[];
  close(): Promise<void>;
}

// --- protobuf wire format -----------------------------------------------------

type Field = { no: number; wire: number; value: bigint | Buffer };

function* fields(buf: Buffer): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let out = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const b = buf[i++]!;
      out |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return out;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >> 3;
    const wire = key & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) yield { no, wire, value: buf.subarray(i, (i += 8)) };
    else if (wire === 5) yield { no, wire, value: buf.subarray(i, (i += 4)) };
    else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, value: buf.subarray(i, (i += len)) };
    } else throw new Error(`protobuf wire type ${wire} not expected in OTLP`);
  }
}

const sub = (buf: Buffer, no: number): Buffer[] => [...fields(buf)].filter((f) => f.no === no && f.wire === 2).map((f) => f.value as Buffer);
const text = (buf: Buffer, no: number): string => sub(buf, no)[0]?.toString('utf8') ?? '';
const hex = (buf: Buffer, no: number): string => sub(buf, no)[0]?.toString('hex') ?? '';

function resourceOf(resource: Buffer | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of resource ? sub(resource, 1) : []) {
    const value = sub(kv, 2)[0];
    out[text(kv, 1)] = value ? text(value, 1) : '';
  }
  return out;
}

function fromProtobuf(signal: 'traces' | 'metrics', protocol: OtlpProtocol, contentType: string, body: Buffer): ReceivedExport[] {
  return sub(body, 1).map((rs) => {
    const scopes = sub(rs, 2);
    return {
      signal,
      protocol,
      contentType,
      resource: resourceOf(sub(rs, 1)[0]),
      spans: signal === 'traces' ? scopes.flatMap((s) => sub(s, 2).map((sp) => ({ traceId: hex(sp, 1), spanId: hex(sp, 2), parentSpanId: hex(sp, 4), name: text(sp, 5) }))) : [],
      metrics: signal === 'metrics' ? scopes.flatMap((s) => sub(s, 2).map((m) => text(m, 1))) : [],
    };
  });
}

// --- JSON (OTLP/HTTP JSON: ids as hex strings, keys in lowerCamelCase) --------------

interface JsonKv {
  key: string;
  value?: { stringValue?: string };
}
interface JsonBody {
  resourceSpans?: { resource?: { attributes?: JsonKv[] }; scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string }[] }[] }[];
  resourceMetrics?: { resource?: { attributes?: JsonKv[] }; scopeMetrics?: { metrics?: { name: string }[] }[] }[];
}

function fromJson(signal: 'traces' | 'metrics', contentType: string, body: Buffer): ReceivedExport[] {
  const parsed = JSON.parse(body.toString('utf8')) as JsonBody;
  const res = (attrs: JsonKv[] | undefined) => Object.fromEntries((attrs ?? []).map((a) => [a.key, a.value?.stringValue ?? '']));
  if (signal === 'traces') {
    return (parsed.resourceSpans ?? []).map((rs) => ({
      signal,
      protocol: 'http/json' as const,
      contentType,
      resource: res(rs.resource?.attributes),
      spans: (rs.scopeSpans ?? []).flatMap((s) => (s.spans ?? []).map((sp) => ({ traceId: sp.traceId, spanId: sp.spanId, parentSpanId: sp.parentSpanId ?? '', name: sp.name }))),
      metrics: [],
    }));
  }
  return (parsed.resourceMetrics ?? []).map((rm) => ({
    signal,
    protocol: 'http/json' as const,
    contentType,
    resource: res(rm.resource?.attributes),
    spans: [],
    metrics: (rm.scopeMetrics ?? []).flatMap((s) => (s.metrics ?? []).map((m) => m.name)),
  }));
}

// --- servers ---------------------------------------------------------------------

/** Starts a receiver for `protocol` on a free loopback port. */
export async function startOtlpReceiver(protocol: OtlpProtocol): Promise<OtlpReceiver> {
  const received: ReceivedExport[] = [];
  if (protocol === 'grpc') {
    const server = new grpc.Server();
    const raw = (b: Buffer) => b;
    const method = (path: string) => ({
      path,
      requestStream: false,
      responseStream: false,
      requestSerialize: raw,
      requestDeserialize: raw,
      responseSerialize: raw,
      responseDeserialize: raw,
    });
    const handler = (signal: 'traces' | 'metrics') => (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) => {
      received.push(...fromProtobuf(signal, 'grpc', 'application/grpc', call.request));
      done(null, Buffer.alloc(0)); // an empty Export…ServiceResponse: everything accepted
    };
    server.addService({ Export: method('/opentelemetry.proto.collector.trace.v1.TraceService/Export') }, { Export: handler('traces') });
    server.addService({ Export: method('/opentelemetry.proto.collector.metrics.v1.MetricsService/Export') }, { Export: handler('metrics') });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    return { endpoint: `http://127.0.0.1:${port}`, received, close: () => new Promise<void>((r) => server.tryShutdown(() => r())) };
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const signal = req.url === '/v1/traces' ? 'traces' : req.url === '/v1/metrics' ? 'metrics' : undefined;
      const contentType = req.headers['content-type'] ?? '';
      if (req.method !== 'POST' || !signal) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      received.push(...(contentType.includes('json') ? fromJson(signal, contentType, body) : fromProtobuf(signal, protocol, contentType, body)));
      // An empty Export…ServiceResponse in the request's own encoding.
      if (contentType.includes('json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
