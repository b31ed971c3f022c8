/**
 * CalendarService RPC implementations: thin wrappers over the domain modules.
 * Errors raised on purpose are ConnectErrors with an ErrorDetail; anything else is
 * mapped by the kit's error interceptor (services/kit/errors.ts; architecture.md,
 * "Errors inside").
 */
import type { ConnectRouter, HandlerContext } from '@connectrpc/connect';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { getAvailability } from './availability';
import { deleteBlock, listBlocks, putBlock } from './blocks';
import { cancelBooking, confirmBooking, getBooking } from './bookings';
import type { CalendarDeps } from './calendar-deps';
import { eraseGuest } from './erasure';
import { placeHold, releaseHold } from './holds';
import { watchEvents, type WatchHub } from './watch';

/** Registers CalendarService on `router`. */
export function registerCalendarService(router: ConnectRouter, deps: CalendarDeps, hub: WatchHub): void {
  router.service(CalendarService, {
    putBlock: (req) => putBlock(deps, req),
    deleteBlock: (req) => deleteBlock(deps, req),
    listBlocks: (req) => listBlocks(deps, req),
    placeHold: (req) => placeHold(deps, req),
    releaseHold: (req) => releaseHold(deps, req),
    confirmBooking: (req) => confirmBooking(deps, req),
    cancelBooking: (req) => cancelBooking(deps, req),
    getBooking: (req) => getBooking(deps, req),
    getAvailability: (req) => getAvailability(deps, req),
    eraseGuest: (req) => eraseGuest(deps, req),
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
