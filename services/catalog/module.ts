/**
 * The catalog service as hosted by a process (see services/kit/service-module.ts).
 * RPCs not yet implemented answer the standard gRPC UNIMPLEMENTED status.
 */
import { join } from 'node:path';
import type { ServiceModule } from '../kit/service-module';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';

export const catalogModule: ServiceModule = {
  name: 'catalog',
  protoServices: [CatalogService.typeName],
  migrations: { prefix: 'catalog', dir: join(__dirname, 'migrations') },
  routes(router) {
    router.service(CatalogService, {});
  },
};
