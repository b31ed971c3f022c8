/**
 * Counters of the notifications service, kept in process. The module (module.ts)
 * subscribes with `onEvent` and forwards delivery outcomes to the kit's Prometheus
 * instruments (recordWebhookDelivery in services/kit/metrics.ts). The log lines stay
 * the operators' first signal (docs/notifications.md, "Operations").
 */

export type MetricName =
  | 'attempts'
  | 'delivered'
  | 'failed_attempts'
  | 'abandoned'
  | 'endpoints_suspended'
  | 'challenges_echoed'
  | 'challenges_failed'
  | 'deletion_requests_escalated'
  /** A circuit breaker opened (or re-opened after a failed probe). */
  | 'breaker_opened'
  /** A circuit breaker closed: a delivery to an endpoint whose breaker was open got its 2xx. */
  | 'breaker_closed'
  /** A 429 or 503 with a Retry-After held its endpoint. */
  | 'retry_after_honoured'
  /** An endpoint answered 410 Gone and was suspended. */
  | 'endpoints_gone';

/** Distributions observed in process: the duration of delivery attempts that reached the network. */
export type ObservationName = 'attempt_seconds';

/** Bucket bounds (seconds) of attempt_seconds; the last bucket is everything above. */
export const ATTEMPT_SECONDS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;

/** A histogram with fixed buckets per label set (labels are bounded: outcome classes, never endpoints). */
interface HistogramState {
  counts: number[];
  sum: number;
  count: number;
}

type Listener = (name: MetricName, labels: Record<string, string>) => void;
type ObservationListener = (name: ObservationName, value: number, labels: Record<string, string>) => void;

class NotificationsMetrics {
  private readonly counters = new Map<MetricName, number>();
  private readonly listeners = new Set<Listener>();
  private readonly observationListeners = new Set<ObservationListener>();
  private readonly histograms = new Map<string, HistogramState>();

  /** Adds one to `name`; `labels` (e.g. event_type) go to listeners only. */
  inc(name: MetricName, labels: Record<string, string> = {}): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + 1);
    for (const l of this.listeners) {
      try {
        l(name, labels);
      } catch {
        // A metrics exporter must never break a delivery.
      }
    }
  }

  /**
   * Records one observation of `name` (attempt_seconds: the duration of one attempt
   * that reached the network, labelled by `outcome`: delivered, http_status, timeout,
   * connection_failed …; never by endpoint, so the series stay bounded).
   */
  observe(name: ObservationName, value: number, labels: Record<string, string> = {}): void {
    const key = `${name}|${Object.entries(labels).map(([k, v]) => `${k}=${v}`).sort().join(',')}`;
    let h = this.histograms.get(key);
    if (!h) this.histograms.set(key, (h = { counts: new Array<number>(ATTEMPT_SECONDS_BUCKETS.length + 1).fill(0), sum: 0, count: 0 }));
    const i = ATTEMPT_SECONDS_BUCKETS.findIndex((b) => value <= b);
    h.counts[i === -1 ? ATTEMPT_SECONDS_BUCKETS.length : i]!++;
    h.sum += value;
    h.count++;
    for (const l of this.observationListeners) {
      try {
        l(name, value, labels);
      } catch {
        // A metrics exporter must never break a delivery.
      }
    }
  }

  /** The observations so far, by `name|label=value,…`: per-bucket counts (not cumulative), sum and count. */
  histogramSnapshot(): Record<string, HistogramState> {
    return Object.fromEntries([...this.histograms].map(([k, h]) => [k, { counts: [...h.counts], sum: h.sum, count: h.count }]));
  }

  /** Calls `fn` on every observation; returns an unsubscribe. */
  onObservation(fn: ObservationListener): () => void {
    this.observationListeners.add(fn);
    return () => this.observationListeners.delete(fn);
  }

  /** Current totals since the process started. */
  snapshot(): Record<MetricName, number> {
    const names: MetricName[] = [
      'attempts', 'delivered', 'failed_attempts', 'abandoned', 'endpoints_suspended',
      'challenges_echoed', 'challenges_failed', 'deletion_requests_escalated',
      'breaker_opened', 'breaker_closed', 'retry_after_honoured', 'endpoints_gone',
    ];
    return Object.fromEntries(names.map((n) => [n, this.counters.get(n) ?? 0])) as Record<MetricName, number>;
  }

  /** Calls `fn` on every increment (the hook for a metrics exporter); returns an unsubscribe. */
  onEvent(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

/** The process-wide counters. */
export const notificationsMetrics = new NotificationsMetrics();
