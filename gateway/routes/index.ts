/** Every route of the public contract under /v1. */
import type { Route } from '../contract-router';
import { blockRoutes } from './blocks';
import { deletionRequestRoutes } from './deletion-requests';
import { eventRoutes } from './events';
import type { RouteDeps } from './deps';
import { listingRoutes } from './listings';
import { propertyRoutes } from './properties';
import { requestLogRoutes } from './requests';
import { sandboxRoutes } from './sandbox';
import { tokenRoutes } from './token';
import { webhookRoutes } from './webhooks';

export type { RouteDeps };

export function contractRoutes(deps: RouteDeps): Route[] {
  return [
    ...tokenRoutes(deps),
    ...propertyRoutes(deps),
    ...blockRoutes(deps),
    ...listingRoutes(deps),
    ...webhookRoutes(deps),
    ...deletionRequestRoutes(deps),
    ...eventRoutes(deps),
    ...sandboxRoutes(deps),
    ...requestLogRoutes(deps),
  ];
}
