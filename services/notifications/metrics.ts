/**
 * The notifications service's measurements, named as the service thinks of them and
 * recorded straight into the kit's Prometheus instruments (services/kit/telemetry/metrics.ts):
 * delivery outcomes into psync_webhook_deliveries_total, per-endpoint control events
 * into psync_webhook_endpoint_events_total, attempt durations into
 * psync_webhook_attempt_duration_seconds. Before telemetry binds a meter provider
 * (tests, the migrate Job) every call is a no-op.
 */
import { recordWebhookAttempt, recordWebhookDelivery, recordWebhookEndpointEvent, type WebhookDeliveryOutcome, type WebhookEndpointEvent } from '../kit/telemetry';

export type MetricName =
  | 'delivered'
  | 'failed_attempts'
  | 'abandoned'
  | 'endpoints_suspended'
  | 'challenges_echoed'
  | 'challenges_failed'
  /** A circuit breaker opened (or re-opened after a failed probe). */
  | 'breaker_opened'
  /** A circuit breaker closed: a delivery to an endpoint whose breaker was open got its 2xx. */
  | 'breaker_closed'
  /** A 429 or 503 with a Retry-After held its endpoint. */
  | 'retry_after_honoured'
  /** An endpoint answered 410 Gone and was suspended. */
  | 'endpoints_gone';

/** Distributions: the duration of delivery attempts that reached the network. */
export type ObservationName = 'attempt_seconds';

const DELIVERY_OUTCOMES: Partial<Record<MetricName, WebhookDeliveryOutcome>> = {
  delivered: 'delivered',
  failed_attempts: 'failed',
  abandoned: 'abandoned',
};

const ENDPOINT_EVENTS: Partial<Record<MetricName, WebhookEndpointEvent>> = {
  breaker_opened: 'breaker_opened',
  breaker_closed: 'breaker_closed',
  retry_after_honoured: 'retry_after_honoured',
  endpoints_gone: 'gone',
  endpoints_suspended: 'suspended',
  challenges_echoed: 'challenge_echoed',
  challenges_failed: 'challenge_failed',
};

export const notificationsMetrics = {
  /** Counts one `name`; `labels` are accepted for call-site context and never become series labels. */
  inc(name: MetricName, _labels: Record<string, string> = {}): void {
    const outcome = DELIVERY_OUTCOMES[name];
    if (outcome) recordWebhookDelivery(outcome);
    const event = ENDPOINT_EVENTS[name];
    if (event) recordWebhookEndpointEvent(event);
  },
  /**
   * Records one attempt that reached the network, labelled by `outcome` (delivered,
   * http_status, timeout, connection_failed …; never by endpoint, so series stay bounded).
   */
  observe(name: ObservationName, seconds: number, labels: { outcome?: string } = {}): void {
    if (name === 'attempt_seconds') recordWebhookAttempt(seconds, labels.outcome ?? 'unknown');
  },
};
