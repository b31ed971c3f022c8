/**
 * What the calendar's domain functions share: the database, the listing directory,
 * the hold lifetime and what to do after a commit that wrote events.
 */
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import type { ListingDirectory } from './listings';

export interface CalendarDeps {
  sql: Sql;
  log: Logger;
  listings: ListingDirectory;
  /** Default hold lifetime in seconds (HOLD_TTL_SECONDS). */
  holdTtlSeconds: number;
  /** Call after committing a transaction that appended events: wakes the outbox relay and local watchers. */
  eventsCommitted(): void;
}
