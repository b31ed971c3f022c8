/**
 * The catalog service as hosted by a process (see services/kit/runtime/service-module.ts):
 * its RPCs, its migrations, and the photo pipeline as its background worker.
 */
import { treePath } from '../kit/db';
import type { ServiceModule } from '../kit/runtime';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { PhotoPipeline } from './photo-pipeline';
import { catalogService } from './service';
import { WorkspaceDirectory } from './workspaces';

/** One pipeline per hosted catalog, created by routes() and started by start(). */
const pipelines = new WeakMap<object, PhotoPipeline>();

function pipelineFor(ctx: Parameters<NonNullable<ServiceModule['start']>>[0]): PhotoPipeline {
  let p = pipelines.get(ctx);
  if (!p) {
    p = new PhotoPipeline({
      sql: ctx.sql,
      log: ctx.log.child({ component: 'catalog-photos' }),
      concurrency: ctx.config.photoConcurrency,
      workspaceConcurrency: ctx.config.photoWorkspaceConcurrency,
      leaseSeconds: ctx.config.photoLeaseSeconds,
      fetchTimeoutMs: ctx.config.photoFetchTimeoutMs,
      allowCidrs: ctx.config.egressAllowCidrs,
      onEvents: () => ctx.outbox.nudge(),
      clock: ctx.clock,
    });
    pipelines.set(ctx, p);
  }
  return p;
}

export const catalogModule: ServiceModule = {
  name: 'catalog',
  protoServices: [CatalogService.typeName],
  migrations: { prefix: 'catalog', dir: treePath('services/catalog/migrations') },
  routes(router, ctx) {
    const photos = pipelineFor(ctx);
    router.service(
      CatalogService,
      catalogService({
        sql: ctx.sql,
        log: ctx.log,
        workspaces: new WorkspaceDirectory(ctx.sql, ctx.clients, () => ctx.urls.identity),
        nudgeOutbox: () => ctx.outbox.nudge(),
        nudgePhotos: () => photos.nudge(),
      }),
    );
  },
  async start(ctx) {
    const photos = pipelineFor(ctx);
    photos.start();
    ctx.shutdown.add('catalog photo pipeline', () => photos.stop());
  },
};
