/**
 * The calendar service as hosted by a process (see services/kit/runtime/service-module.ts):
 * nights and who holds them, partner blocks, marketplace holds and bookings, the
 * resumable event stream (pruned after CALENDAR_EVENT_RETENTION_DAYS), idempotency
 * keys of the marketplace's writes (pruned after 24 h) and guest erasure
 * (docs/calendar.md, docs/marketplace.md).
 */
import { skipEventSeqsOfTheGap } from './after-restore';
import { treePath } from '../kit/db';
import type { ServiceContext, ServiceModule } from '../kit/runtime';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import type { CalendarDeps } from './calendar-deps';
import { encodeOutboxRow } from './event-codec';
import { EventPruner } from './event-retention';
import { HoldSweeper } from './holds';
import { IdempotencyKeyPruner } from './idempotency';
import { ListingDirectory } from './listings';
import { registerCalendarService } from './service';
import { WatchHub } from './watch';

/** Per-context state: routes() and start() of one process share it. */
const state = new WeakMap<ServiceContext, { deps: CalendarDeps; hub: WatchHub }>();

function stateFor(ctx: ServiceContext): { deps: CalendarDeps; hub: WatchHub } {
  let s = state.get(ctx);
  if (!s) {
    const hub = new WatchHub();
    const deps: CalendarDeps = {
      sql: ctx.sql,
      log: ctx.log,
      // ctx.urls is filled once the internal server is bound: resolve lazily.
      listings: new ListingDirectory(() => ctx.clients.client(CatalogService, ctx.urls.catalog)),
      holdTtlSeconds: ctx.config.holdTtlSeconds,
      eventsCommitted() {
        ctx.outbox.nudge();
        hub.notify();
      },
    };
    s = { deps, hub };
    state.set(ctx, s);
  }
  return s;
}

export const calendarModule: ServiceModule = {
  name: 'calendar',
  protoServices: [CalendarService.typeName],
  migrations: { prefix: 'calendar', dir: treePath('services/calendar/migrations') },
  // Its events are plain rows: the relay encodes them (event-codec.ts).
  outboxEncoder: encodeOutboxRow,
  afterRestore: ({ sql }) => skipEventSeqsOfTheGap(sql),
  routes(router, ctx) {
    const { deps, hub } = stateFor(ctx);
    registerCalendarService(router, deps, hub);
  },
  async start(ctx) {
    const { deps, hub } = stateFor(ctx);
    const sweeper = new HoldSweeper(ctx.sql, ctx.log.child({ component: 'calendar-hold-sweeper' }), () => deps.eventsCommitted());
    sweeper.start();
    ctx.shutdown.add('calendar hold sweeper', () => sweeper.stop());
    const pruner = new EventPruner(ctx.sql, ctx.log.child({ component: 'calendar-event-retention' }), ctx.config.calendarEventRetentionDays);
    pruner.start();
    ctx.shutdown.add('calendar event retention', () => pruner.stop());
    const keys = new IdempotencyKeyPruner(ctx.sql, ctx.log.child({ component: 'calendar-idempotency-retention' }));
    keys.start();
    ctx.shutdown.add('calendar idempotency key retention', () => keys.stop());
    // Registered after the internal server: runs before it closes, so open
    // WatchEvents streams end cleanly instead of holding the drain.
    ctx.shutdown.add('calendar watch streams', () => hub.close());
  },
};
