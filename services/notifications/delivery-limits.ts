/**
 * The dispatcher's bounds: how many attempts run at once, per endpoint, per lane and in
 * all, when an endpoint counts as slow, how long an attempt and a lease last, and when
 * abandoned deliveries suspend an endpoint. One file, read by the claim statement
 * (delivery-claim.ts), the dispatcher and the poster's connection pool (module.ts).
 */
/** Deliveries in flight per endpoint per process while its attempts succeed (one while they fail). */
export const PER_ENDPOINT_CONCURRENCY = 8;
/** Deliveries in flight per process to endpoints whose attempts succeed promptly. */
export const FAST_LANE_SLOTS = 256;
/** Deliveries in flight per process to endpoints that fail, are slow, or are being probed. */
export const SLOW_LANE_SLOTS = 256;
/** Deliveries in flight per process in all. */
export const MAX_IN_FLIGHT = FAST_LANE_SLOTS + SLOW_LANE_SLOTS;
/** An endpoint whose recent attempts take longer than this (moving average) moves to the slow lane. */
export const SLOW_ATTEMPT_MS = 2000;
/** Time-out of one delivery attempt (connect, TLS, request, response head). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** How long a claim is valid; well over one attempt, so a live worker never loses it. */
export const LEASE_MS = 30_000;
/** Abandoned deliveries in a row (no 2xx between them) that suspend an active endpoint. */
export const SUSPEND_AFTER_ABANDONED = 5;
