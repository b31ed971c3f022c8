/**
 * A signed-in session: the partner SDK's client (packages/partner-sdk/src/client.ts)
 * holding the API key and the access token in memory only. Nothing is written to
 * storage, cookies or the URL, so a reload asks for the key again.
 *
 * Everything the page does on the network or on a timer belongs to the session: the
 * client sends through a fetch tied to the session's AbortController, and the token
 * renewal and every poll wait with `later`/`sleep`. `end()` (sign-out) aborts it at
 * once: requests in flight are cancelled, waits end, any later call is refused before
 * it leaves the page, and the session lets go of the client (`client` then throws
 * SessionEnded). One mechanism for every poll (docs/decisions.md "The sandbox console").
 *
 * The key is sent only to `POST /v1/token` (the SDK's token source); every other call
 * carries the access token. The SDK renews the token shortly before it expires when a
 * call needs it; `keepFresh` also renews it while the page sits idle, so the page
 * never holds an expired token.
 *
 * A `429` is shown at once (no automatic retries of it): the console spends the same
 * quota as the partner's own integration and never works around it.
 *
 * No DOM types here (globalThis timers and fetch only), so the rules are tested in Node
 * (test/console/session.test.ts).
 */
import { PartnerClient } from '../../packages/partner-sdk/src/client';
import type { TokenInfo } from '../../packages/partner-sdk/src/token-source';
import { renewInMs, RETRY_RENEWAL_MS } from './renewal';

/** What a call or a wait of an ended session fails with. */
export class SessionEnded extends Error {
  override name = 'SessionEnded';
  constructor() {
    super('signed out');
  }
}

export interface SessionOptions {
  /** The API's base URL, including `/v1`. */
  baseUrl: string;
  apiKey: string;
  /** The fetch to send with (default: the global fetch). */
  fetch?: (request: Request) => Promise<Response>;
}

export class Session {
  /** The token exchanged at sign-in (`keepFresh` reports the renewed ones). */
  readonly token: TokenInfo;
  readonly #controller: AbortController;
  #client: PartnerClient | undefined;

  private constructor(client: PartnerClient, controller: AbortController, token: TokenInfo) {
    this.#client = client;
    this.#controller = controller;
    this.token = token;
  }

  /**
   * Exchanges `apiKey` for a token; throws the SDK's TokenExchangeError when refused
   * (and nothing of the attempt is kept).
   */
  static async open(options: SessionOptions): Promise<Session> {
    const controller = new AbortController();
    const signal = controller.signal;
    const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    const client = new PartnerClient({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      retry: { rateLimitRetries: 0, serverRetries: 1 },
      // Nothing leaves the page once the session has ended, and what is in flight is cancelled.
      fetch: (request) => (signal.aborted ? Promise.reject(new SessionEnded()) : send(new Request(request, { signal: AbortSignal.any([request.signal, signal]) }))),
    });
    try {
      return new Session(client, controller, await client.token());
    } catch (e) {
      controller.abort(new SessionEnded());
      throw e;
    }
  }

  /** The SDK's client; throws SessionEnded after `end()`. */
  get client(): PartnerClient {
    if (!this.#client) throw new SessionEnded();
    return this.#client;
  }

  get ended(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Aborted by `end()`. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Sign-out: cancels every request and wait of the session and forgets the client. */
  end(): void {
    this.#client = undefined;
    this.#controller.abort(new SessionEnded());
  }

  /** Runs `fn` in `ms` unless the session ends first; returns the cancel function. */
  later(ms: number, fn: () => void): () => void {
    if (this.ended) return () => undefined;
    const cancel = () => {
      clearTimeout(timer);
      this.signal.removeEventListener('abort', cancel);
    };
    const timer = setTimeout(() => {
      cancel();
      fn();
    }, ms);
    this.signal.addEventListener('abort', cancel);
    return cancel;
  }

  /** Resolves in `ms`; rejects with SessionEnded as soon as the session ends. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(new SessionEnded());
      const cancelTimer = this.later(ms, () => {
        this.signal.removeEventListener('abort', ended);
        resolve();
      });
      const ended = () => {
        cancelTimer();
        reject(new SessionEnded());
      };
      this.signal.addEventListener('abort', ended, { once: true });
    });
  }
}

/**
 * Renews the access token shortly before it expires even while the page sits idle,
 * and calls `onToken` with each new one (never after the session ended). Returns the
 * stop function; the session's end stops it too.
 */
export function keepFresh(session: Session, onToken: (t: TokenInfo) => void, onError: (e: unknown) => void): () => void {
  let stopped = false;
  let cancel = () => {};
  const live = () => !stopped && !session.ended;
  const schedule = (delayMs: number) => {
    cancel = session.later(delayMs, () => {
      session.client.token().then(
        (next) => {
          if (!live()) return;
          onToken(next);
          schedule(renewInMs(next.expiresAt.getTime() - Date.now()));
        },
        (e: unknown) => {
          if (!live()) return;
          onError(e);
          schedule(RETRY_RENEWAL_MS);
        },
      );
    });
  };
  schedule(renewInMs(session.token.expiresAt.getTime() - Date.now()));
  return () => {
    stopped = true;
    cancel();
  };
}
