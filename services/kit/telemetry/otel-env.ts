/**
 * What the OpenTelemetry SDK environment specification asks of this process's
 * exporters and resource (docs/operations.md "Telemetry"), read once at start-up:
 *
 * - the resource: `service.name` of the role (psync, psync-gateway, …) unless
 *   `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` says otherwise (the SDK's own
 *   environment detector reads both, OTEL_SERVICE_NAME first);
 * - spans: `OTEL_TRACES_EXPORTER` (`otlp`, `console`, `none`; a list), over the protocol
 *   `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL` (`grpc`,
 *   `http/protobuf`, `http/json`; default `http/protobuf`);
 * - metrics: `OTEL_METRICS_EXPORTER` (`prometheus`, `otlp`, `console`, `none`), over
 *   `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`, every
 *   `OTEL_METRIC_EXPORT_INTERVAL` ms (default 60000) within `OTEL_METRIC_EXPORT_TIMEOUT`.
 *
 * The exporters themselves read the endpoint, headers, time-out, compression and
 * certificates (`OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]ENDPOINT`, `…_HEADERS`, …), and
 * the tracer provider the sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`)
 * and the batch processor's `OTEL_BSP_*`, as the specification says.
 *
 * Two defaults differ from the specification, on purpose: with `OTEL_TRACES_EXPORTER`
 * unset, spans leave over OTLP only when an OTLP endpoint is set (the specification's
 * default, `http://localhost:4318`, has no collector on a partner's laptop or in most
 * pods: every span would be lost and shutdown would wait for the time-out); and the
 * Prometheus reader behind `/metrics` on METRICS_PORT always runs (the chart's
 * ServiceMonitor, alerts and dashboard read it), `otlp` is added beside it.
 */
import { resourceFromAttributes, defaultResource, detectResources, envDetector, type Resource } from '@opentelemetry/resources';
import { ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ConsoleMetricExporter, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { ConfigError } from '../base';

/** The OTLP transports the specification names. */
export const OTLP_PROTOCOLS = ['grpc', 'http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

type Env = Record<string, string | undefined>;

/*
 * The OTLP exporters are loaded when the environment asks for one: the gRPC and
 * protobuf ones bring @grpc/grpc-js and protobufjs, a few hundred milliseconds of
 * start-up (docs/performance.md "Image footprint and cold start") that a process
 * exporting nothing over OTLP, the default, never needs.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const otlpSpanExporter: Record<OtlpProtocol, () => SpanExporter> = {
  grpc: () => new (require('@opentelemetry/exporter-trace-otlp-grpc') as typeof import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter(),
  'http/protobuf': () => new (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(),
  'http/json': () => new (require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(),
};
const otlpMetricExporter: Record<OtlpProtocol, () => PushMetricExporter> = {
  grpc: () => new (require('@opentelemetry/exporter-metrics-otlp-grpc') as typeof import('@opentelemetry/exporter-metrics-otlp-grpc')).OTLPMetricExporter(),
  'http/protobuf': () => new (require('@opentelemetry/exporter-metrics-otlp-proto') as typeof import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter(),
  'http/json': () => new (require('@opentelemetry/exporter-metrics-otlp-http') as typeof import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter(),
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** The OTLP protocol of `signal`: its own variable, else the general one, else `http/protobuf`. */
export function otlpProtocol(env: Env, signal: 'TRACES' | 'METRICS'): OtlpProtocol {
  const own = `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`;
  const variable = env[own]?.trim() ? own : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = env[variable]?.trim() || 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(value)) throw new ConfigError(`${variable}=${value} is not one of ${OTLP_PROTOCOLS.join(', ')}`);
  return value as OtlpProtocol;
}

/** The exporters named by `OTEL_<signal>_EXPORTER` (a comma-separated list), each checked against `known`. */
function exporterNames<K extends string>(env: Env, variable: string, known: readonly K[], fallback: K[]): K[] {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const names = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const n of names) if (!(known as readonly string[]).includes(n)) throw new ConfigError(`${variable}=${raw}: "${n}" is not one of ${known.join(', ')}`);
  return names.includes('none') ? [] : (names as K[]);
}

/** The span exporters this process runs (none: spans are not recorded at all). */
export function spanExporters(env: Env): SpanExporter[] {
  const endpoint = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
  const names = exporterNames(env, 'OTEL_TRACES_EXPORTER', ['otlp', 'console', 'none'] as const, endpoint ? ['otlp'] : []);
  return names.map((n) => {
    if (n === 'console') return new ConsoleSpanExporter();
    return otlpSpanExporter[otlpProtocol(env, 'TRACES')]();
  });
}

/** Milliseconds from `variable`, a positive integer, or `fallback` when unset. */
function millis(env: Env, variable: string, fallback: number): number {
  const raw = env[variable]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${variable}=${raw} is not a positive number of milliseconds`);
  return n;
}

/** The push readers this process adds beside the Prometheus one (`OTEL_METRICS_EXPORTER=otlp` or `console`). */
export function metricReaders(env: Env): PeriodicExportingMetricReader[] {
  const names = exporterNames(env, 'OTEL_METRICS_EXPORTER', ['prometheus', 'otlp', 'console', 'none'] as const, ['prometheus']);
  const interval = millis(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000);
  const timeout = Math.min(millis(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000), interval);
  const exporter = (n: 'otlp' | 'console'): PushMetricExporter => {
    if (n === 'console') return new ConsoleMetricExporter();
    return otlpMetricExporter[otlpProtocol(env, 'METRICS')]();
  };
  return names
    .filter((n): n is 'otlp' | 'console' => n === 'otlp' || n === 'console')
    .map((n) => new PeriodicExportingMetricReader({ exporter: exporter(n), exportIntervalMillis: interval, exportTimeoutMillis: timeout }));
}

/**
 * This process's resource: the SDK's defaults (`telemetry.sdk.*`), then `service.name`
 * of the role, then what `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` say, which
 * win (the SDK's environment detector; it reads the process environment).
 */
export function processResource(serviceName: string): Resource {
  return defaultResource()
    .merge(resourceFromAttributes({ 'service.name': serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
}
