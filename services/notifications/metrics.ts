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
  | 'deletion_requests_escalated';

type Listener = (name: MetricName, labels: Record<string, string>) => void;

class NotificationsMetrics {
  private readonly counters = new Map<MetricName, number>();
  private readonly listeners = new Set<Listener>();

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

  /** Current totals since the process started. */
  snapshot(): Record<MetricName, number> {
    const names: MetricName[] = [
      'attempts', 'delivered', 'failed_attempts', 'abandoned', 'endpoints_suspended',
      'challenges_echoed', 'challenges_failed', 'deletion_requests_escalated',
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
