/**
 * The stable names of log lines: a line that operators alert on or tests look for
 * carries one of these as its `event` field, beside a message written for people.
 * Messages may be reworded; an event name stays, so searches, alerts and tests keyed
 * on it keep working. Names are `<area>.<thing>.<what happened>`, lower case.
 * docs/operations.md ("Log events") lists each with its level and fields.
 */
export const LOG_EVENTS = [
  'process.listening',
  'process.shutdown.complete',
  'rpc.server.bound',
  'rpc.failure.internal',
  'rpc.failure.unavailable',
  'http.request',
  'http.request.failed',
  'database.opened',
  'database.role.ready',
  'migration.applied',
  'sql_function.applied',
  'sql_function.kept_newer',
  'data_dir.narrowed',
  'data_dir.unfixable',
  'data_dir.foreign_owner',
  'credentials.operator.ready',
  'after_restore.forced',
  'bus.opened',
  'bus.memory.republished',
  'bus.nats.anonymous',
  'bus.nats.reconnected',
  'bus.stream.created',
  'bus.stream.updated',
  'bus.stream.update_denied',
  'bus.consumer.updated',
  'bus.consumer.recreated',
  'outbox.publish.failed',
  'identity.signing_key.ready',
  'identity.signing_key.missing',
  'identity.api_key.issued',
  'identity.internal_client.issued',
  'token.exchange.refused',
  'request_log.records.refused',
  'request_log.queue_full',
  'request_log.batch.failed',
  'request_log.batch.refused',
  'console.not_built',
  'catalog.photo.rejected',
  'calendar.events.pruned',
  'notifications.encryption_key.ready',
  'notifications.encryption_key.missing',
  'webhook.domain_event.refused',
  'webhook.delivery.delivered',
  'webhook.delivery.abandoned',
  'webhook.delivery.replayed',
  'webhook.delivery.lease_expired',
  'webhook.endpoint.suspended',
  'webhook.endpoint.circuit_closed',
  'webhook.endpoint.health_failed',
  'webhook.connections.closed',
  'webhook.dispatcher.draining',
  'webhook.dispatcher.aborted',
  'deletion_request.escalated',
] as const;

export type LogEvent = (typeof LOG_EVENTS)[number];

/** A line's `event` field; taking a LogEvent makes a misspelt name a type error. */
export function logEvent(name: LogEvent): LogEvent {
  return name;
}
