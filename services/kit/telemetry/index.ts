/**
 * Tracing and metrics for one process (telemetry.ts, otel-env.ts), the project's own
 * instruments (metrics.ts) and those of the OpenTelemetry semantic conventions
 * (semconv.ts).
 *
 * This file is the module's whole public surface: code outside services/kit/telemetry/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export {
  bindMeterProvider,
  type BusConsumerState,
  recordBusConsumerRecreated,
  recordBusEventRefused,
  recordHttpRequest,
  recordInternalAuthRefusal,
  recordPhotoProcessed,
  recordRateLimitRefusal,
  recordRequestLogDropped,
  recordTokenIssued,
  recordWebhookAttempt,
  recordWebhookDelivery,
  recordWebhookEndpointEvent,
  recordWorkerRound,
  recordWorkerRoundFailed,
  registerBusConsumer,
  registerOutboxLag,
  registerWebhookGauges,
  type RequestLogDropReason,
  setBusAnonymous,
  type WebhookDeliveryOutcome,
  type WebhookEndpointEvent,
} from './metrics';
export { OTLP_PROTOCOLS, type OtlpProtocol } from './otel-env';
export { ATTR_RPC_RESPONSE_STATUS_CODE, errorType, recordDbOperation, recordMessageSent, recordRpcCall, rpcSpanAttributes } from './semconv';
export { activeTraceId, contextFromHeaders, currentTraceHeaders, inConsumerSpan, inSpan, spansAreRecorded, startTelemetry, type Telemetry, tracer } from './telemetry';
