/**
 * CalendarService RPC implementations: thin wrappers over the domain modules.
 * Errors raised on purpose are ConnectErrors with an ErrorDetail; anything else is
 * mapped by the kit's error interceptor (services/kit/rpc/errors.ts; docs/decisions.md
 * "Errors have one path").
 */
import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CALLER } from '../kit/rpc';
import { getAvailability } from './availability';
import { deleteBlock, listBlocks, putBlock } from './blocks';
import { cancelBooking, confirmBooking, getBooking } from './bookings';
import type { CalendarDeps } from './calendar-deps';
import { eraseGuest, getErasure } from './erasure';
import { placeHold, releaseHold } from './holds';
import { listListingNights } from './listing-nights';
import { watchEvents, type WatchHub } from './watch';

/** Registers CalendarService on `router`. */
export function registerCalendarService(router: ConnectRouter, deps: CalendarDeps, hub: WatchHub): void {
  router.service(CalendarService, {
    putBlock: (req) => putBlock(deps, req),
    deleteBlock: (req) => deleteBlock(deps, req),
    listBlocks: (req) => listBlocks(deps, req),
    listListingNights: (req) => listListingNights(deps, req),
    // Idempotency keys are scoped per authenticated caller (idempotency.ts).
    placeHold: (req, ctx) => placeHold(deps, req, ctx.values.get(CALLER)),
    releaseHold: (req) => releaseHold(deps, req),
    confirmBooking: (req, ctx) => confirmBooking(deps, req, ctx.values.get(CALLER)),
    cancelBooking: (req, ctx) => cancelBooking(deps, req, ctx.values.get(CALLER)),
    getBooking: (req) => getBooking(deps, req),
    getAvailability: (req) => getAvailability(deps, req),
    eraseGuest: (req) => eraseGuest(deps, req),
    getErasure: (req) => getErasure(deps, req),
    async *watchEvents(req, ctx: HandlerContext) {
      try {
        yield* watchEvents(deps.sql, hub, req, ctx);
      } catch (err) {
        // The subscriber left: the stream just ends.
        if (ctx.signal.aborted) return;
        throw err;
      }
    },
  });
}
