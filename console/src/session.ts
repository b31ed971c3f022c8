/**
 * A signed-in session: the partner SDK's client (packages/partner-sdk/src/client.ts)
 * holding the API key and the access token in memory only. Nothing is written to
 * storage, cookies or the URL, so a reload asks for the key again, and signing out
 * is dropping the session object.
 *
 * The key is sent only to `POST /v1/token` (the SDK's token source); every other call
 * carries the access token. The SDK renews the token shortly before it expires when a
 * call needs it; `keepFresh` also renews it while the page sits idle, so the page
 * never holds an expired token.
 *
 * A `429` is shown at once (no automatic retries of it): the console spends the same
 * quota as the partner's own integration and never works around it.
 */
import { PartnerClient } from '../../packages/partner-sdk/src/client';
import type { TokenInfo } from '../../packages/partner-sdk/src/token-source';
import { renewInMs, RETRY_RENEWAL_MS } from './renewal';

export interface Session {
  client: PartnerClient;
  token: TokenInfo;
}

/** The API's base URL: the gateway that served this page (same origin, no CORS). */
export function apiBase(): string {
  return `${window.location.origin}/v1`;
}

/** Exchanges `apiKey` for a token; throws the SDK's TokenExchangeError when refused. */
export async function signIn(apiKey: string): Promise<Session> {
  const client = new PartnerClient({
    baseUrl: apiBase(),
    apiKey,
    retry: { rateLimitRetries: 0, serverRetries: 1 },
  });
  const token = await client.token();
  return { client, token };
}

/**
 * Renews the access token shortly before it expires even while the page sits idle,
 * and calls `onToken` with each new one. Returns the stop function (sign-out).
 */
export function keepFresh(session: Session, onToken: (t: TokenInfo) => void, onError: (e: unknown) => void): () => void {
  let timer = 0;
  const schedule = (delayMs: number) => {
    timer = window.setTimeout(() => {
      session.client.token().then(
        (next) => {
          onToken(next);
          schedule(renewInMs(next.expiresAt.getTime() - Date.now()));
        },
        (e: unknown) => {
          onError(e);
          schedule(RETRY_RENEWAL_MS);
        },
      );
    }, delayMs);
  };
  schedule(renewInMs(session.token.expiresAt.getTime() - Date.now()));
  return () => window.clearTimeout(timer);
}
