/**
 * The access token: exchanged at `POST /token` with the API key on first use, kept
 * until shortly before it expires, then exchanged again. Concurrent callers share one
 * exchange. A token the API refused (`401`) is dropped so the next caller exchanges.
 *
 * "Shortly before": when less than `refreshMarginSeconds` (default 60) of its life is
 * left, but never more than a fifth of its lifetime, so a deployment with very short
 * tokens still uses each for most of its life. The lifetime is the answer's
 * `expires_in`, counted from when the exchange was sent (so the client never holds a
 * token longer than the service intended).
 */
import type { Clock } from './transport';
import type { Token } from './types';

/** The token the client holds. */
export interface TokenInfo {
  accessToken: string;
  /** When the service stops accepting it (the client's clock). */
  expiresAt: Date;
  /** The workspace of the API key. */
  workspaceId: string;
  /** Whether that workspace is a sandbox. */
  sandbox: boolean;
}

interface Held {
  info: TokenInfo;
  /** When the client exchanges again (milliseconds since the epoch). */
  refreshAt: number;
}

export class TokenSource {
  private held: Held | undefined;
  private pending: Promise<Held> | undefined;
  /** Exchanges made so far. */
  exchanges = 0;

  constructor(
    /** Performs `POST /token` and returns its body. */
    private readonly exchange: () => Promise<Token>,
    private readonly clock: Clock,
    private readonly refreshMarginSeconds: number,
  ) {}

  /** A token valid for a while yet (exchanging when there is none). */
  async current(): Promise<TokenInfo> {
    const held = this.held;
    if (held && this.clock.now() < held.refreshAt) return held.info;
    this.pending ??= this.renew().finally(() => {
      this.pending = undefined;
    });
    return (await this.pending).info;
  }

  /** Drops `accessToken` if it is still the one held. */
  refused(accessToken: string): void {
    if (this.held?.info.accessToken === accessToken) this.held = undefined;
  }

  private async renew(): Promise<Held> {
    const sentAt = this.clock.now();
    const t = await this.exchange();
    this.exchanges++;
    const lifetimeMs = t.expires_in * 1000;
    const marginMs = Math.min(this.refreshMarginSeconds * 1000, lifetimeMs / 5);
    this.held = {
      info: { accessToken: t.access_token, expiresAt: new Date(sentAt + lifetimeMs), workspaceId: t.workspace_id, sandbox: t.sandbox },
      refreshAt: sentAt + lifetimeMs - marginMs,
    };
    return this.held;
  }
}
