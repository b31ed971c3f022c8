/**
 * Typed Connect clients of the internal services the gateway calls, created once per
 * app from the runner's shared InternalClients (one HTTP/2 session per service URL).
 */
import type { Client } from '@connectrpc/connect';
import { CalendarService } from '../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import { NotificationsService } from '../gen/psync/notifications/v1/notifications_pb';
import type { InternalClients } from '../services/kit/rpc';
import type { ServiceUrls } from '../services/kit/runtime';

export interface Upstreams {
  identity: Client<typeof IdentityService>;
  catalog: Client<typeof CatalogService>;
  calendar: Client<typeof CalendarService>;
  notifications: Client<typeof NotificationsService>;
}

export function upstreams(clients: InternalClients, urls: ServiceUrls): Upstreams {
  return {
    identity: clients.client(IdentityService, urls.identity),
    catalog: clients.client(CatalogService, urls.catalog),
    calendar: clients.client(CalendarService, urls.calendar),
    notifications: clients.client(NotificationsService, urls.notifications),
  };
}
