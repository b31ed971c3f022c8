/**
 * OpenTelemetry for one process: a tracer provider (always, so W3C trace context
 * propagates and trace ids reach the logs; spans are recorded only when something
 * exports them), span export only where configured, and a meter provider whose
 * Prometheus reader is served on METRICS_PORT at `/metrics`, with OTLP beside it where
 * configured. Both carry the process's resource.
 *
 * Export, resource and sampling follow the OpenTelemetry SDK environment variables
 * (otel-env.ts: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`, `OTEL_EXPORTER_OTLP_*` with the
 * `grpc`, `http/protobuf` and `http/json` protocols, `OTEL_TRACES_SAMPLER`, …).
 * `PSYNC_TRACE_EXPORT_FILE=<path>` adds every finished span as one JSON line appended to
 * that file — a debugging aid (and what test/telemetry uses), not for production.
 *
 * Nothing here is auto-instrumentation: connect-node and postgres.js are not covered by
 * it, so spans come from the kit's own Connect interceptors
 * (internal-server.ts, internal-client.ts), the gateway's error mapper, the bus
 * consumers and egress.ts, all through the helpers below.
 */
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { AlwaysOffSampler, BatchSpanProcessor, SimpleSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { metricReaders, processResource, spanExporters } from './otel-env';
import type { Logger } from '../base';
import { bindMeterProvider } from './metrics';
import {
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  errorType,
  type MessagingSystem,
  recordMessageProcessed,
} from './semconv';

const TRACER_NAME = 'psync';

/** The tracer every kit helper uses (a proxy: valid before and after start). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** The trace id of the active span, for log lines; undefined outside any span. */
export function activeTraceId(): string | undefined {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** Marks `span` failed with `err` (message only: no payloads). */
export function recordError(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Whether this process records spans (an exporter is configured). When it does not
 * (startTelemetry picks AlwaysOff), a child span would be a non-recording span that
 * only mints new ids: see inSpan.
 */
let spansRecorded = true;

/** Whether this process records spans (sql-telemetry.ts starts database spans only then). */
export function spansAreRecorded(): boolean {
  return spansRecorded;
}

/**
 * Runs `fn` in a new active span (ended when `fn` settles; a rejection marks it failed).
 *
 * When nothing records spans and the call already runs inside the span it would be a
 * child of — a nested helper, or a call served in process (its SERVER span's parent,
 * from `traceparent`, is the very span the caller is in) — `fn` runs under that span
 * instead: no ids minted, no context switch. Logs keep the trace id, `traceparent`
 * still travels on (flag 00). A new root (`parent` given and different, e.g. a request
 * from the network) always gets its own span.
 */
export function inSpan<T>(name: string, opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context }, fn: (span: Span) => Promise<T>): Promise<T> {
  // Not `async`: on the hot path an extra promise per span is measurable (each one also
  // runs the async-context hooks).
  if (!spansRecorded) {
    const active = trace.getSpan(context.active());
    if (active && continuesActive(active, opts.parent)) {
      try {
        return fn(active);
      } catch (err) {
        return Promise.reject(err); // a synchronous throw still arrives as a rejection
      }
    }
  }
  const parent = opts.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** `parent` is absent, or names the same span as `active`. */
function continuesActive(active: Span, parent: Context | undefined): boolean {
  const a = active.spanContext();
  if (!trace.isSpanContextValid(a)) return false;
  if (parent === undefined) return true;
  const p = trace.getSpanContext(parent);
  return p !== undefined && p.spanId === a.spanId && p.traceId === a.traceId;
}

/** The W3C trace-context headers (`traceparent`, `tracestate`) of the active context. */
export function currentTraceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** A context whose parent is the trace context carried by `headers` (case-insensitive keys). */
export function contextFromHeaders(headers: Record<string, string> | undefined): Context {
  if (!headers) return ROOT_CONTEXT;
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return propagation.extract(ROOT_CONTEXT, lower);
}

/**
 * Runs a bus consumer's handler for one event in a CONSUMER span continuing the trace
 * of the `traceparent` header the outbox captured when the event was appended, named
 * and attributed as the messaging conventions say (`process <subject>`), and records
 * `messaging.process.duration` (semconv.ts).
 */
export function inConsumerSpan<T>(
  event: { id: string; subject: string; headers?: Record<string, string>; deliveryCount: number },
  durable: string,
  system: MessagingSystem,
  fn: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  return inSpan(
    `process ${event.subject}`,
    {
      kind: SpanKind.CONSUMER,
      parent: contextFromHeaders(event.headers),
      attributes: {
        [ATTR_MESSAGING_SYSTEM]: system,
        [ATTR_MESSAGING_OPERATION_NAME]: 'process',
        [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
        [ATTR_MESSAGING_DESTINATION_NAME]: event.subject,
        [ATTR_MESSAGING_CONSUMER_GROUP_NAME]: durable,
        'messaging.message.id': event.id,
        'psync.delivery_count': event.deliveryCount,
      },
    },
    () =>
      fn().then(
        (v) => {
          recordMessageProcessed(system, event.subject, durable, seconds());
          return v;
        },
        (err: unknown) => {
          recordMessageProcessed(system, event.subject, durable, seconds(), errorType(err));
          throw err;
        },
      ),
  );
}

/** Writes finished spans as JSON lines (PSYNC_TRACE_EXPORT_FILE; debugging aid). */
class FileSpanExporter implements SpanExporter {
  constructor(
    private readonly path: string,
    private readonly service: string,
  ) {}

  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void {
    try {
      const lines = spans.map((s) =>
        JSON.stringify({
          service: this.service,
          name: s.name,
          kind: SpanKind[s.kind],
          traceId: s.spanContext().traceId,
          spanId: s.spanContext().spanId,
          parentSpanId: s.parentSpanContext?.spanId ?? null,
          startTime: s.startTime,
          endTime: s.endTime,
          status: s.status,
          attributes: s.attributes,
        }),
      );
      appendFileSync(this.path, lines.map((l) => `${l}\n`).join(''));
      done({ code: 0 });
    } catch (err) {
      done({ code: 1, error: err as Error });
    }
  }

  async shutdown(): Promise<void> {}
}

export interface Telemetry {
  /** Port the metrics server listens on; undefined when it could not bind. */
  readonly metricsPort: number | undefined;
  /** Flushes and stops exporters and the metrics server; never rejects. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  /** Process name: service.name is `psync-<name>` (`psync` for the all-in-one process). */
  name: string;
  host: string;
  /** METRICS_PORT; 0 picks a free port. */
  metricsPort: number;
  /** A port that cannot be bound fails start-up (rejects with the listen error) instead of being logged. */
  metricsPortRequired?: boolean;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** More span processors (tests: an in-memory exporter). */
  spanProcessors?: SpanProcessor[];
}

/**
 * Starts tracing and metrics for this process. A metrics port that cannot be bound
 * rejects when `metricsPortRequired`; otherwise it is logged as an error (one line
 * naming METRICS_PORT) and the process carries on without `/metrics`.
 */
export async function startTelemetry(opts: TelemetryOptions): Promise<Telemetry> {
  const env = opts.env ?? process.env;
  const resource = processResource(opts.name === 'psync' ? 'psync' : `psync-${opts.name}`);
  const serviceName = String(resource.attributes['service.name']);

  const exporters = spanExporters(env);
  const spanProcessors: SpanProcessor[] = [...(opts.spanProcessors ?? []), ...exporters.map((e) => new BatchSpanProcessor(e))];
  const file = env.PSYNC_TRACE_EXPORT_FILE;
  if (file) spanProcessors.push(new SimpleSpanProcessor(new FileSpanExporter(file, serviceName)));

  // Nothing to export to: spans are not recorded (AlwaysOff), which spares every call
  // the span objects, attributes and clocks; their ids are still minted, so trace
  // context still propagates (flag 00) and trace ids still reach the logs.
  spansRecorded = spanProcessors.length > 0;
  // Recorded: the sampler OTEL_TRACES_SAMPLER names (the provider reads it; parent-based always-on by default).
  const sampler = spansRecorded ? undefined : new AlwaysOffSampler();
  const tracerProvider = new NodeTracerProvider({ resource, spanProcessors, sampler });
  tracerProvider.register(); // AsyncLocalStorage context manager + W3C trace-context/baggage propagators

  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const pushReaders = metricReaders(env);
  const meterProvider = new MeterProvider({ resource, readers: [prometheus, ...pushReaders] });
  const unbind = bindMeterProvider(meterProvider, env);

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') return prometheus.getMetricsRequestHandler(req, res);
    res.statusCode = 404;
    res.end('not found\n');
  });
  let metricsPort: number | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.metricsPort, opts.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    metricsPort = (server.address() as AddressInfo).port;
    opts.log.info(
      { host: opts.host, port: metricsPort, service_name: serviceName, span_exporters: exporters.length, metric_push_readers: pushReaders.length, trace_file: file || undefined },
      'metrics served at /metrics',
    );
  } catch (err) {
    if (opts.metricsPortRequired) {
      unbind();
      throw err;
    }
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EADDRINUSE' ? 'is already in use' : `cannot be bound (${code ?? (err as Error).message})`;
    opts.log.error(
      { port: opts.metricsPort, code },
      `metrics server could not start: METRICS_PORT ${opts.metricsPort} ${why}; continuing without /metrics (set METRICS_PORT to a free port, or 0 for any)`,
    );
  }

  return {
    metricsPort,
    async shutdown() {
      unbind();
      if (metricsPort !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
      // Without a reachable collector the OTLP exporter rejects only after its time-out.
      const settle = (what: string, p: Promise<unknown>) => p.catch((err: unknown) => opts.log.warn({ err }, `telemetry: ${what} shutdown failed`));
      await Promise.all([settle('tracer provider', tracerProvider.shutdown()), settle('meter provider', meterProvider.shutdown())]);
      trace.disable();
      propagation.disable();
      context.disable();
      spansRecorded = true;
    },
  };
}
