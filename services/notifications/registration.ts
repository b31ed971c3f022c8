/**
 * The webhook endpoint: registration with its challenge, reading, secret rotation
 * (spec "Webhook endpoint", its status table, PUT /webhooks/endpoint;
 * docs/contract-gaps.md "signatures", "paused endpoint", "previous_valid_until").
 *
 * PutEndpoint, in order:
 * 1. `events` at most 16 subscribable kinds (deduplicated); the URL vetted by the
 *    egress guard (https, port 443/8443, a DNS name resolving to public addresses or
 *    EGRESS_ALLOW_CIDRS). Every refused URL gets the same generic error.
 * 2. The first registration creates the row with a new secret (status
 *    pending_verification); a later one keeps the row and its secret.
 * 3. A signed `endpoint.challenge` is POSTed to the requested URL during the call: a
 *    2xx JSON body `{"challenge": <same string>}` within 5 s → `active`, anything
 *    else → `pending_verification`.
 * 4. URL, events and the resulting status are written together, so deliveries never
 *    reach an unverified URL; `signing_secret` is returned by exactly one call (the
 *    first to complete after it was minted).
 */
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { challengeEnvelope, subscribableKind, type EventKind } from './envelope';
import { notFound, serviceUnavailable } from '../kit/rpc';
import { urlRefused } from './errors';
import { canonicalUuid } from '../kit/base';
import { notificationsMetrics } from './metrics';
import { mintSigningSecret, openPrevious, SecretBox } from './secret-box';
import { signatureHeaders, type SigningKeys } from './signature';
import type { PostError, WebhookPoster } from './webhook-poster';

/** Spec "Limits": webhook `url` length. */
export const MAX_URL_LENGTH = 2048;
/** Spec "Limits": challenge response time. */
export const CHALLENGE_TIMEOUT_MS = 5_000;
/** Default rotation overlap (docs/contract-gaps.md "previous_valid_until"; at most 7 days: notifications.proto). */
export const DEFAULT_OVERLAP_SECONDS = 86_400;
const MAX_CHALLENGE_RESPONSE_BYTES = 64 * 1024;

export type EndpointStatus = 'pending_verification' | 'active' | 'suspended';

/** A stored endpoint, as RPCs present it (never with a secret). */
export interface EndpointRow {
  workspace_id: string;
  url: string;
  events: string[];
  status: EndpointStatus;
  previous_valid_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface RegistrationDeps {
  sql: Sql;
  log: Logger;
  box: SecretBox | undefined;
  poster: WebhookPoster;
}

/** Why a challenge did not activate the endpoint (logged; never told to the partner). */
type ChallengeOutcome = 'echoed' | 'wrong_echo' | 'not_json' | 'http_status' | PostError;

export class EndpointRegistry {
  constructor(private readonly deps: RegistrationDeps) {}

  private requireBox(): SecretBox {
    if (!this.deps.box) throw serviceUnavailable('webhook signing secrets cannot be stored: SECRETS_ENCRYPTION_KEY is not configured');
    return this.deps.box;
  }

  /**
   * The subscribed kinds, deduplicated in first-seen order (notifications.proto's rules
   * allow at most 16 entries, each a kind partners subscribe to).
   */
  static parseEvents(events: WebhookEventType[]): EventKind[] {
    const kinds: EventKind[] = [];
    for (const e of events) {
      const k = subscribableKind(e);
      if (k && !kinds.includes(k)) kinds.push(k);
    }
    return kinds;
  }

  /** PutEndpoint. Returns the response fields; `signingSecret` only on the call that first issues it. */
  async put(workspaceIdRaw: string, url: string, events: WebhookEventType[]): Promise<{ url: string; events: EventKind[]; status: EndpointStatus; signingSecret?: string }> {
    const workspaceId = canonicalUuid(workspaceIdRaw);
    const kinds = EndpointRegistry.parseEvents(events);
    const box = this.requireBox();
    if (url.length > MAX_URL_LENGTH || !(await this.deps.poster.vet(url))) throw urlRefused();

    const { sql } = this.deps;
    // 2. The first registration mints the secret; concurrent first calls agree on one row.
    await sql`
      insert into notifications.endpoints (workspace_id, url, events, status, secret_ciphertext)
      values (${workspaceId}, ${url}, ${sql.array(kinds)}::text[], 'pending_verification', ${box.seal(mintSigningSecret(), workspaceId)})
      on conflict (workspace_id) do nothing`;
    const keys = await this.signingKeys(workspaceId);

    // 3. The challenge, to the URL asked for (not yet stored).
    const outcome = await this.challenge(url, keys);
    const ok = outcome === 'echoed';
    notificationsMetrics.inc(ok ? 'challenges_echoed' : 'challenges_failed');

    // 4. URL, events and status together; the secret is shown by exactly one call.
    const result = await sql.begin(async (tx) => {
      const [before] = await tx<{ secret_shown: boolean; status: EndpointStatus }[]>`
        select secret_shown, status from notifications.endpoints where workspace_id = ${workspaceId} for update`;
      const [after] = await tx<{ status: EndpointStatus; secret_ciphertext: Buffer }[]>`
        update notifications.endpoints
        set url = ${url}, events = ${tx.array(kinds)}::text[],
            status = ${ok ? 'active' : 'pending_verification'},
            verified_at = case when ${ok} then now() else verified_at end,
            consecutive_abandoned = case when ${ok} then 0 else consecutive_abandoned end,
            suspended_at = case when ${ok} then null else suspended_at end,
            secret_shown = true,
            updated_at = now()
        where workspace_id = ${workspaceId}
        returning status, secret_ciphertext`;
      return { before: before!, after: after! };
    });
    this.deps.log.info(
      { workspace_id: workspaceId, challenge: outcome, status: result.after.status, previous_status: result.before.status, events: kinds },
      ok ? 'webhook endpoint registered and verified' : 'webhook endpoint registered; challenge not echoed',
    );
    return {
      url,
      events: kinds,
      status: result.after.status,
      ...(result.before.secret_shown ? {} : { signingSecret: box.open(result.after.secret_ciphertext, workspaceId) }),
    };
  }

  /**
   * The endpoint's URL and signing keys when it is active and subscribed to something
   * (receiver checks, endpoint-checks.ts); undefined otherwise.
   */
  async activeEndpoint(workspaceId: string): Promise<{ url: string; keys: SigningKeys } | undefined> {
    const [row] = await this.deps.sql<{ url: string }[]>`
      select url from notifications.endpoints
      where workspace_id = ${workspaceId} and status = 'active' and cardinality(events) > 0`;
    return row ? { url: row.url, keys: await this.signingKeys(workspaceId) } : undefined;
  }

  /** The current secret, and the previous one while its overlap is open. */
  private async signingKeys(workspaceId: string): Promise<SigningKeys> {
    const box = this.requireBox();
    const [row] = await this.deps.sql<{ secret_ciphertext: Buffer; previous_secret_ciphertext: Buffer | null; previous_valid: boolean | null }[]>`
      select secret_ciphertext, previous_secret_ciphertext, (previous_valid_until > now()) as previous_valid
      from notifications.endpoints where workspace_id = ${workspaceId}`;
    if (!row) throw new Error('endpoint row vanished');
    return {
      current: box.open(row.secret_ciphertext, workspaceId),
      previous: row.previous_valid && row.previous_secret_ciphertext ? openPrevious(box, row.previous_secret_ciphertext, workspaceId) : undefined,
    };
  }

  /** Sends one signed challenge to `url`; 'echoed' only for a 2xx JSON body echoing it within 5 s. */
  private async challenge(url: string, keys: SigningKeys): Promise<ChallengeOutcome> {
    const c = challengeEnvelope();
    const headers = { ...signatureHeaders(keys, c.body), 'Content-Type': 'application/json', 'User-Agent': 'PartnerSync-Webhooks/1' };
    const res = await this.deps.poster.post(url, c.body, headers, {
      timeoutMs: CHALLENGE_TIMEOUT_MS,
      maxResponseBytes: MAX_CHALLENGE_RESPONSE_BYTES,
      readBody: true,
    });
    if (!('status' in res)) return res.error;
    if (res.status < 200 || res.status > 299) return 'http_status';
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body.toString('utf8'));
    } catch {
      return 'not_json';
    }
    const echoed = typeof parsed === 'object' && parsed !== null && (parsed as { challenge?: unknown }).challenge === c.challenge;
    return echoed ? 'echoed' : 'wrong_echo';
  }

  /** GetEndpoint. */
  async get(workspaceIdRaw: string): Promise<EndpointRow> {
    const workspaceId = canonicalUuid(workspaceIdRaw);
    const [row] = await this.deps.sql<EndpointRow[]>`
      select workspace_id, url, events, status,
             case when previous_valid_until > now() then previous_valid_until end as previous_valid_until,
             created_at, updated_at
      from notifications.endpoints where workspace_id = ${workspaceId}`;
    if (!row) throw notFound(ErrorReason.ENDPOINT_NOT_FOUND, 'the workspace has no webhook endpoint');
    return row;
  }

  /**
   * RotateSecret: a new secret signs X-Signature from now on; the one it replaces signs
   * X-Signature-Previous until `previous_valid_until` (now + overlap, default 24 h). A
   * rotation during an open overlap drops the oldest secret.
   */
  async rotate(workspaceIdRaw: string, overlapSeconds: number | undefined): Promise<{ signingSecret: string; previousValidUntil: Date }> {
    const workspaceId = canonicalUuid(workspaceIdRaw);
    // 0 to 7 days: notifications.proto's rule on overlap_seconds.
    const overlap = overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
    const box = this.requireBox();
    const secret = mintSigningSecret();
    const [row] = await this.deps.sql<{ previous_valid_until: Date }[]>`
      update notifications.endpoints
      set previous_secret_ciphertext = secret_ciphertext,
          previous_valid_until = now() + ${overlap}::float8 * interval '1 second',
          secret_ciphertext = ${box.seal(secret, workspaceId)},
          secret_shown = true,
          updated_at = now()
      where workspace_id = ${workspaceId}
      returning previous_valid_until`;
    if (!row) throw notFound(ErrorReason.ENDPOINT_NOT_FOUND, 'the workspace has no webhook endpoint');
    this.deps.log.info({ workspace_id: workspaceId, previous_valid_until: row.previous_valid_until }, 'webhook signing secret rotated');
    return { signingSecret: secret, previousValidUntil: row.previous_valid_until };
  }
}
