/** When the console renews its access token (session.ts `keepFresh`). */

/** A refused renewal (the key revoked, the token ceiling reached) is tried again this much later. */
export const RETRY_RENEWAL_MS = 30_000;

/**
 * When to renew a token that has `leftMs` of its life left: a minute before it
 * expires, or a fifth of what is left for a short-lived one. It is never earlier than
 * the SDK's own renewal point (TokenSource: a minute or a fifth of the whole
 * lifetime before expiry), so the `token()` call made then does exchange.
 */
export function renewInMs(leftMs: number): number {
  return Math.max(1000, leftMs - Math.min(60_000, leftMs / 5));
}
