/**
 * The notifications service as hosted by a process (see services/kit/service-module.ts).
 * RPCs not yet implemented answer the standard gRPC UNIMPLEMENTED status.
 */
import { join } from 'node:path';
import type { ServiceModule } from '../kit/service-module';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';

export const notificationsModule: ServiceModule = {
  name: 'notifications',
  protoServices: [NotificationsService.typeName],
  migrations: { prefix: 'notifications', dir: join(__dirname, 'migrations') },
  routes(router) {
    router.service(NotificationsService, {});
  },
};
