/**
 * The public contract's limits (docs/partner-sync-api-v1.md, "Limits"), named once for
 * all TypeScript: the gateway's validators, presenters and OpenAPI document, and the
 * services, import them from here.
 *
 * Two of them are also rules of the database, named once in SQL:
 *   MAX_NIGHTS           calendar.max_nights()           (calendar migration 0008)
 *   RATE_WINDOW_SECONDS  identity.rate_window_seconds()  (identity migration 0005)
 * test/kit/limits-agree.test.ts runs the migrations and fails when the two disagree.
 */

/** Most nights a block, hold, booking or availability range may span: two years. */
export const MAX_NIGHTS = 730;

/** Most nights one read of a listing's calendar may span (GET /listings/{listing_id}/nights): a year, leap day included. */
export const MAX_NIGHTS_READ = 366;

/** Rate-limit windows: fixed windows of this many seconds, aligned to the Unix epoch. */
export const RATE_WINDOW_SECONDS = 3600;

/** Longest life of an access token: one hour (TOKEN_TTL_SECONDS may be shorter). */
export const MAX_TOKEN_TTL_SECONDS = 3600;

/** Rows of a list page when the caller does not say (`page_size` omitted). */
export const PAGE_SIZE_DEFAULT = 50;

/** Most rows a caller may ask for in one list page (`page_size`). */
export const PAGE_SIZE_MAX = 200;

/** How long the events feed keeps an event (GET /v1/events; docs/partners/missed-events.md promises at least 30 days). */
export const EVENT_FEED_RETENTION_DAYS = 35;
