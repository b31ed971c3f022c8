/**
 * Gateway readiness: ready only when every internal service it calls answers
 * grpc.health.v1 SERVING (which in turn means its migrations ran and its database
 * and bus answer). The gateway itself keeps no state.
 */
import { Health, HealthCheckResponse_ServingStatus as Status } from '../gen/grpc/health/v1/health_pb';
import type { InternalClients } from '../services/kit/rpc';
import type { ServiceUrls } from '../services/kit/runtime';

/** Fully-qualified service names the gateway depends on, by where they live. */
const DEPENDENCIES: Record<keyof ServiceUrls, string> = {
  identity: 'psync.identity.v1.IdentityService',
  catalog: 'psync.catalog.v1.CatalogService',
  calendar: 'psync.calendar.v1.CalendarService',
  notifications: 'psync.notifications.v1.NotificationsService',
};

export interface ReadinessReport {
  ready: boolean;
  services: Record<string, 'serving' | 'not_serving' | 'unreachable'>;
}

/** Asks each upstream service for its health, in parallel, with a short deadline. */
export async function checkReadiness(clients: InternalClients, urls: ServiceUrls): Promise<ReadinessReport> {
  const entries = await Promise.all(
    (Object.keys(DEPENDENCIES) as (keyof ServiceUrls)[]).map(async (name) => {
      try {
        const res = await clients.client(Health, urls[name]).check({ service: DEPENDENCIES[name] }, { timeoutMs: 2000 });
        return [name, res.status === Status.SERVING ? 'serving' : 'not_serving'] as const;
      } catch {
        return [name, 'unreachable'] as const;
      }
    }),
  );
  return { ready: entries.every(([, s]) => s === 'serving'), services: Object.fromEntries(entries) };
}
