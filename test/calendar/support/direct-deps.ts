/**
 * CalendarDeps for calling the calendar's domain functions directly on a test database,
 * below the service: every listing counts as owned, commits wake nothing.
 */
import type { Sql } from '../../../services/kit/db';
import type { CalendarDeps } from '../../../services/calendar/calendar-deps';
import type { ListingDirectory } from '../../../services/calendar/listings';
import { testLogger } from '../../support/bus';

export function directDeps(sql: Sql): CalendarDeps {
  return {
    sql,
    log: testLogger(),
    listings: { assertOwned: async () => undefined } as unknown as ListingDirectory,
    holdTtlSeconds: 900,
    eventsCommitted: () => undefined,
  };
}
