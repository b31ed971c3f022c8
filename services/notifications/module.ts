/**
 * The notifications service as hosted by a process (see services/kit/service-module.ts):
 * the webhook endpoint and its challenge, signing secrets and rotation, durable
 * signed deliveries fed by the calendar's events, deletion requests and their
 * acknowledgement. Behaviour and decisions: docs/notifications.md.
 */
import { join } from 'node:path';
import type { ServiceContext, ServiceModule } from '../kit/service-module';
import type { Subscription } from '../kit/bus';
import { resolveSecretKey } from '../kit/local-keys';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { DeletionRequests } from './deletion-requests';
import { DeliveryDispatcher } from './dispatcher';
import { CALENDAR_SUBJECTS, DeliveryIntake, INTAKE_CONSUMER } from './intake';
import { EndpointRegistry } from './registration';
import { SecretBox } from './secret-box';
import { notificationsService } from './service';
import { createWebhookPoster } from './webhook-poster';

/** Everything one hosted instance of the service uses, built once per context. */
interface Runtime {
  registry: EndpointRegistry;
  dispatcher: DeliveryDispatcher;
  intake: DeliveryIntake;
  deletionRequests: DeletionRequests;
  hasKey: boolean;
}

const runtimes = new WeakMap<ServiceContext, Runtime>();

/** Events handled at once by one process (pullers on the durable consumer). */
const INTAKE_CONCURRENCY = 32;

function runtimeFor(ctx: ServiceContext): Runtime {
  let rt = runtimes.get(ctx);
  if (rt) return rt;
  const { config, sql, log } = ctx;
  const key = resolveSecretKey({
    configured: config.secretsEncryptionKey,
    dataDir: config.dataDir,
    embedded: ctx.embedded,
    name: 'secrets-encryption',
  });
  const box = key ? new SecretBox(key) : undefined;
  const poster = createWebhookPoster({ allowCidrs: config.egressAllowCidrs });
  const dispatcher = new DeliveryDispatcher({
    sql,
    log: log.child({ component: 'webhook-dispatcher' }),
    box,
    poster,
    schedule: config.webhookRetrySchedule,
    soleWorker: ctx.embedded,
  });
  rt = {
    registry: new EndpointRegistry({ sql, log, box, poster }),
    dispatcher,
    intake: new DeliveryIntake({ sql, log, onDeliveryCreated: () => dispatcher.nudge() }),
    deletionRequests: new DeletionRequests({ sql, log, escalationSeconds: config.deletionEscalationSeconds }),
    hasKey: box !== undefined,
  };
  runtimes.set(ctx, rt);
  return rt;
}

export const notificationsModule: ServiceModule = {
  name: 'notifications',
  protoServices: [NotificationsService.typeName],
  migrations: { prefix: 'notifications', dir: join(__dirname, 'migrations') },

  routes(router, ctx) {
    const rt = runtimeFor(ctx);
    router.service(
      NotificationsService,
      notificationsService({ sql: ctx.sql, registry: () => rt.registry, deletionRequests: () => rt.deletionRequests }),
    );
  },

  async start(ctx) {
    const rt = runtimeFor(ctx);
    const { log, config, shutdown } = ctx;
    if (!rt.hasKey) {
      log.warn('SECRETS_ENCRYPTION_KEY is not set: webhook registration and rotation answer service_unavailable (503)');
    }
    await rt.dispatcher.start();
    rt.deletionRequests.start();
    // Several pullers on the one durable consumer: each event still goes to one of
    // them, and commits (one fsync each) overlap instead of queueing.
    const subscriptions: Subscription[] = [];
    for (let i = 0; i < INTAKE_CONCURRENCY; i++) {
      subscriptions.push(
        await ctx.bus.subscribe({
          durable: INTAKE_CONSUMER,
          subjects: Object.values(CALENDAR_SUBJECTS),
          handler: (event) => rt.intake.handle(event),
        }),
      );
    }
    // Hooks run last-registered first: stop taking events, then drain deliveries.
    shutdown.add('notifications escalation sweep', () => rt.deletionRequests.stop());
    shutdown.add('notifications deliveries', () => rt.dispatcher.stop(Math.max(500, Math.floor(config.shutdownGraceMs * 0.6))));
    shutdown.add('notifications event intake', async () => {
      await Promise.all(subscriptions.map((sub) => sub.stop()));
    });
    log.info(
      { retry_schedule: config.webhookRetrySchedule, subjects: Object.values(CALENDAR_SUBJECTS) },
      'webhook deliveries: consuming calendar events',
    );
  },
};
