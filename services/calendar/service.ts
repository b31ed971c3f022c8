/**
 * CalendarService RPC implementations: thin wrappers over the domain modules.
 * Errors raised on purpose are ConnectErrors with an ErrorDetail; anything else is
 * logged with its cause and answered INTERNAL without its message (architecture.md,
 * "Errors inside").
 */
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import type { Logger } from '../kit/logger';
import { getAvailability } from './availability';
import { deleteBlock, listBlocks, putBlock } from './blocks';
import { cancelBooking, confirmBooking, getBooking } from './bookings';
import type { CalendarDeps } from './calendar-deps';
import { eraseGuest } from './erasure';
import { placeHold, releaseHold } from './holds';
import { watchEvents, type WatchHub } from './watch';

function internal(log: Logger, rpc: string, err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  log.error({ err, rpc }, 'calendar: unexpected failure');
  return new ConnectError('internal error', Code.Internal, undefined, undefined, err);
}

/** Wraps a unary implementation so unexpected errors never leak their text. */
function unary<Req, Res>(log: Logger, rpc: string, fn: (req: Req) => Promise<Res>): (req: Req) => Promise<Res> {
  return async (req) => {
    try {
      return await fn(req);
    } catch (err) {
      throw internal(log, rpc, err);
    }
  };
}

/** Registers CalendarService on `router`. */
export function registerCalendarService(router: ConnectRouter, deps: CalendarDeps, hub: WatchHub): void {
  const log = deps.log;
  router.service(CalendarService, {
    putBlock: unary(log, 'PutBlock', (req) => putBlock(deps, req)),
    deleteBlock: unary(log, 'DeleteBlock', (req) => deleteBlock(deps, req)),
    listBlocks: unary(log, 'ListBlocks', (req) => listBlocks(deps, req)),
    placeHold: unary(log, 'PlaceHold', (req) => placeHold(deps, req)),
    releaseHold: unary(log, 'ReleaseHold', (req) => releaseHold(deps, req)),
    confirmBooking: unary(log, 'ConfirmBooking', (req) => confirmBooking(deps, req)),
    cancelBooking: unary(log, 'CancelBooking', (req) => cancelBooking(deps, req)),
    getBooking: unary(log, 'GetBooking', (req) => getBooking(deps, req)),
    getAvailability: unary(log, 'GetAvailability', (req) => getAvailability(deps, req)),
    eraseGuest: unary(log, 'EraseGuest', (req) => eraseGuest(deps, req)),
    async *watchEvents(req, ctx: HandlerContext) {
      try {
        yield* watchEvents(deps.sql, hub, req, ctx);
      } catch (err) {
        if (ctx.signal.aborted) return;
        throw internal(log, 'WatchEvents', err);
      }
    },
  });
}
