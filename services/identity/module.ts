/**
 * The identity service as hosted by a process (see services/kit/service-module.ts).
 * RPCs not yet implemented answer the standard gRPC UNIMPLEMENTED status.
 */
import { join } from 'node:path';
import type { ServiceModule } from '../kit/service-module';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';

export const identityModule: ServiceModule = {
  name: 'identity',
  protoServices: [IdentityService.typeName],
  migrations: { prefix: 'identity', dir: join(__dirname, 'migrations') },
  routes(router) {
    router.service(IdentityService, {});
  },
};
