/**
 * The notifications service as hosted by a process (see services/kit/runtime/service-module.ts):
 * the webhook endpoint and its challenge, signing secrets and rotation, durable
 * signed deliveries fed by the calendar's events, deletion requests and their
 * acknowledgement. Behaviour and decisions: docs/notifications.md.
 */
import { EventFeedPruner } from './event-feed';
import { EndpointCheckPruner, EndpointChecks } from './endpoint-checks';
import { treePath } from '../kit/db';
import type { ServiceContext, ServiceModule } from '../kit/runtime';
import type { Subscription } from '../kit/events';
import { logEvent, resolveSecretKey, type ResolvedSecretKey } from '../kit/base';
import type { Sql } from '../kit/db';
import { registerWebhookGauges } from '../kit/telemetry';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { DeletionRequests } from './deletion-requests';
import { DeliveryDispatcher } from './dispatcher';
import { PER_ENDPOINT_CONCURRENCY } from './delivery-limits';
import { calendarOwner } from './event-proof';
import { CALENDAR_SUBJECTS, DeliveryIntake, INTAKE_CONSUMER } from './intake';
import { EndpointRegistry } from './registration';
import { resealSecrets } from './reseal';
import { SecretBox } from './secret-box';
import { notificationsService } from './service';
import { createWebhookPoster, type WebhookPoster } from './webhook-poster';

/** Everything one hosted instance of the service uses, built once per context. */
interface Runtime {
  registry: EndpointRegistry;
  poster: WebhookPoster;
  dispatcher: DeliveryDispatcher;
  intake: DeliveryIntake;
  deletionRequests: DeletionRequests;
  endpointChecks: EndpointChecks;
  hasKey: boolean;
  /** The secret box (undefined without a key), for the start-up re-encryption sweep. */
  box: SecretBox | undefined;
  /** The secrets-encryption key's origin and file, for the start-up log. */
  key: ResolvedSecretKey | undefined;
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
  const box = key ? new SecretBox(key.key, config.secretsEncryptionKeyPrevious) : undefined;
  // Kept-alive connections per endpoint, as many as the dispatcher sends to it at once.
  const poster = createWebhookPoster({ allowCidrs: config.egressAllowCidrs, connectionsPerEndpoint: PER_ENDPOINT_CONCURRENCY });
  const dispatcher = new DeliveryDispatcher({
    sql,
    asyncCommitSql: ctx.asyncCommitSql,
    log: log.child({ component: 'webhook-dispatcher' }),
    box,
    poster,
    schedule: config.webhookRetrySchedule,
    soleWorker: ctx.embedded,
    clock: ctx.clock,
  });
  const registry = new EndpointRegistry({ sql, log, box, poster });
  rt = {
    registry,
    endpointChecks: new EndpointChecks({ sql, log, poster, activeEndpoint: (workspaceId) => registry.activeEndpoint(workspaceId) }),
    poster,
    dispatcher,
    intake: new DeliveryIntake({
      sql,
      log,
      // ctx.urls is filled once the internal server is bound: resolve lazily.
      owner: calendarOwner(() => ctx.clients.client(CalendarService, ctx.urls.calendar)),
      onDeliveryCreated: () => dispatcher.nudge(),
    }),
    deletionRequests: new DeletionRequests({ sql, log, escalationSeconds: config.deletionEscalationSeconds, clock: ctx.clock }),
    hasKey: box !== undefined,
    box,
    key,
  };
  runtimes.set(ctx, rt);
  return rt;
}

/**
 * Scrape-time gauges (docs/operations.md, "Telemetry"): the delivery backlog in one
 * query, and the erasures the PsyncErasuresUnacknowledged alert is about — deletion
 * requests that escalated (unacknowledged DELETION_ESCALATION_SECONDS after creation)
 * and are still not acknowledged, as `psync deletion-requests list --state escalated`.
 */
function registerGauges(sql: Sql): () => void {
  return registerWebhookGauges({
    async deliveryBacklog() {
      const [r] = await sql<{ pending: number; oldest_age_seconds: number }[]>`
        select count(*)::int as pending,
               coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest_age_seconds
        from notifications.deliveries where state = 'pending'`;
      return { pending: Number(r?.pending ?? 0), oldestAgeSeconds: Math.max(0, Number(r?.oldest_age_seconds ?? 0)) };
    },
    async endpointBreakers() {
      const [r] = await sql<{ open: number; half_open: number }[]>`
        select count(*) filter (where breaker = 'open')::int as open, count(*) filter (where breaker = 'half_open')::int as half_open
        from notifications.endpoint_health where breaker <> 'closed'`;
      return { open: Number(r?.open ?? 0), halfOpen: Number(r?.half_open ?? 0) };
    },
    async erasuresUnacknowledged() {
      const [r] = await sql<{ n: number }[]>`
        select count(*)::int as n from notifications.deletion_requests
        where acknowledged_at is null and escalated_at is not null`;
      return Number(r?.n ?? 0);
    },
  });
}

export const notificationsModule: ServiceModule = {
  name: 'notifications',
  protoServices: [NotificationsService.typeName],
  migrations: { prefix: 'notifications', dir: treePath('services/notifications/migrations') },
  // After a database restore the intake reads the stream again from its oldest event:
  // what the restored database handled is skipped (processed_events), what it had not
  // becomes deliveries (docs/operations.md "Backup and restore").
  afterRestore: async ({ bus }) => ({ intake_consumer_rewound: await bus.forgetConsumer(INTAKE_CONSUMER) }),
  busConsumers: [INTAKE_CONSUMER],

  routes(router, ctx) {
    const rt = runtimeFor(ctx);
    router.service(
      NotificationsService,
      notificationsService({
        sql: ctx.sql,
        log: ctx.log,
        registry: () => rt.registry,
        deletionRequests: () => rt.deletionRequests,
        endpointChecks: () => rt.endpointChecks,
        // ctx.urls is filled once the internal server is bound: resolve lazily.
        catalog: () => ctx.clients.client(CatalogService, ctx.urls.catalog),
        deliveriesQueued: () => rt.dispatcher.nudge(),
      }),
    );
  },

  async start(ctx) {
    const rt = runtimeFor(ctx);
    const { log, config, shutdown } = ctx;
    if (!rt.hasKey) {
      log.warn(
        { event: logEvent('notifications.encryption_key.missing') },
        'SECRETS_ENCRYPTION_KEY is not set: webhook registration and rotation answer service_unavailable (503)',
      );
    } else if (rt.key && rt.key.origin !== 'configured') {
      const how = rt.key.origin === 'generated' ? 'generated (first start)' : 'loaded';
      log.info(
        { event: logEvent('notifications.encryption_key.ready'), source: rt.key.origin, file: rt.key.file },
        `secrets-encryption key: ${how} from DATA_DIR/keys (embedded default; set SECRETS_ENCRYPTION_KEY to choose one)`,
      );
    }
    if (rt.box?.rotating) {
      const { resealed, unreadable } = await resealSecrets(ctx.sql, rt.box);
      const line = 'SECRETS_ENCRYPTION_KEY_PREVIOUS: stored signing secrets re-encrypted under SECRETS_ENCRYPTION_KEY';
      if (unreadable > 0) log.warn({ resealed, unreadable }, `${line}; some open under neither key`);
      else log.info({ resealed, unreadable }, line);
    }
    const unregisterGauges = registerGauges(ctx.sql);
    shutdown.add('notifications metrics', () => {
      unregisterGauges();
    });
    await rt.dispatcher.start();
    rt.deletionRequests.start();
    const feedPruner = new EventFeedPruner(ctx.sql, log);
    feedPruner.start();
    const checkPruner = new EndpointCheckPruner(ctx.sql, log);
    checkPruner.start();
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
    shutdown.add('notifications events feed pruning', () => feedPruner.stop());
    shutdown.add('notifications receiver checks', async () => {
      await checkPruner.stop();
      await rt.endpointChecks.stop();
    });
    shutdown.add('notifications deliveries', async () => {
      await rt.dispatcher.stop(Math.max(500, Math.floor(config.shutdownGraceMs * 0.6)));
      const closed = rt.poster.close();
      log.info({ event: logEvent('webhook.connections.closed'), connections: closed }, 'webhooks: kept-alive connections to partners closed');
    });
    shutdown.add('notifications event intake', async () => {
      await Promise.all(subscriptions.map((sub) => sub.stop()));
    });
    log.info({ retry_schedule: config.webhookRetrySchedule, subjects: Object.values(CALENDAR_SUBJECTS) }, 'webhook deliveries: consuming calendar events');
  },
};
