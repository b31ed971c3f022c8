/**
 * The identity service's SQL: tagged templates only, schema-qualified (in the
 * embedded mode every service shares one connection, so no search_path is assumed).
 *
 * Rate-limit windows come from the DATABASE clock (`identity.rate_window_start(now())`,
 * migration 0005), never a replica's own, so every replica counts in the same window.
 * Both counters count through `identity.count_requests`, the one definition of "count
 * unless at the limit".
 */
import type { Sql } from '../kit/db';
import type { Bucket } from './rate-limit';
import type { EnvironmentName } from './access-tokens';

export interface WorkspaceRow {
  workspace_id: string;
  name: string;
  environment: EnvironmentName;
  created_at: Date;
}

export async function insertWorkspace(sql: Sql, w: { name: string; environment: EnvironmentName }): Promise<WorkspaceRow> {
  const [row] = await sql<WorkspaceRow[]>`
    insert into identity.workspaces (name, environment)
    values (${w.name}, ${w.environment})
    returning workspace_id, name, environment, created_at`;
  return row!;
}

export async function selectWorkspace(sql: Sql, workspaceId: string): Promise<WorkspaceRow | undefined> {
  const [row] = await sql<WorkspaceRow[]>`
    select workspace_id, name, environment, created_at
    from identity.workspaces
    where workspace_id = ${workspaceId}`;
  return row;
}

export interface IssuedKeyRow {
  key_id: string;
  workspace_id: string;
  environment: EnvironmentName;
  created_at: Date;
}

/** Stores a key for an existing workspace; undefined when the workspace does not exist. */
export async function insertKey(sql: Sql, k: { keyId: string; workspaceId: string; secretHash: Buffer }): Promise<IssuedKeyRow | undefined> {
  const [row] = await sql<IssuedKeyRow[]>`
    with ws as (
      select workspace_id, environment from identity.workspaces where workspace_id = ${k.workspaceId}
    ), inserted as (
      insert into identity.api_keys (key_id, workspace_id, secret_hash)
      select ${k.keyId}, ws.workspace_id, ${k.secretHash} from ws
      returning key_id, workspace_id, created_at
    )
    select inserted.key_id, inserted.workspace_id, ws.environment, inserted.created_at
    from inserted join ws using (workspace_id)`;
  return row;
}

export interface RevokedKeyRow {
  key_id: string;
  workspace_id: string;
  revoked_at: Date;
}

/** Revokes a key, keeping the first revocation time; undefined for an unknown key. */
export async function revokeKey(sql: Sql, keyId: string): Promise<RevokedKeyRow | undefined> {
  const [row] = await sql<RevokedKeyRow[]>`
    update identity.api_keys
    set revoked_at = coalesce(revoked_at, now())
    where key_id = ${keyId}
    returning key_id, workspace_id, revoked_at`;
  return row;
}

export interface KeyForExchangeRow {
  key_id: string;
  workspace_id: string;
  environment: EnvironmentName;
  secret_hash: Buffer;
  revoked: boolean;
}

/** Everything the token exchange needs about a key, in one lookup by its id. */
export async function selectKeyForExchange(sql: Sql, keyId: string): Promise<KeyForExchangeRow | undefined> {
  const [row] = await sql<KeyForExchangeRow[]>`
    select k.key_id, k.workspace_id, w.environment, k.secret_hash, k.revoked_at is not null as revoked
    from identity.api_keys k
    join identity.workspaces w using (workspace_id)
    where k.key_id = ${keyId}`;
  return row;
}

export interface CountRow {
  /** The count after the increment; null when the limit was already reached. */
  counted: number | null;
  /** The window's count before this statement. */
  previous: number;
  now_epoch: number;
}

/** Counts one request of `keyId` in `bucket` unless `limit` is reached (the token endpoint's ceiling). */
export async function countRequest(sql: Sql, c: { keyId: string; bucket: Bucket; limit: number }): Promise<CountRow> {
  const [row] = await sql<CountRow[]>`
    with c as (
      select identity.count_requests(${c.keyId}, ${c.bucket}, identity.rate_window_start(now()), 1, ${c.limit}::integer) as previous
    )
    select case when previous < ${c.limit}::integer then previous + 1 end as counted, previous,
           extract(epoch from now())::float8 as now_epoch
    from c`;
  return row!;
}

export interface AuthorizeRow extends CountRow {
  /** The token's key exists, belongs to the token's workspace and is not revoked. */
  key_live: boolean;
  /** Environment of the addressed workspace; null when it does not resolve. */
  environment: EnvironmentName | null;
}

const OID_BOOL_ARRAY = 1000;
const OID_TEXT_ARRAY = 1009;
const OID_UUID_ARRAY = 2951;

/** What Authorize checks for one request. */
export interface AuthorizeInput {
  keyId: string;
  tokenWorkspaceId: string;
  /** Null when the addressed id is not a UUID: it cannot resolve (a scope mismatch). */
  addressedWorkspaceId: string | null;
  /** Count the request in the 'contract' bucket (a live key's, unless `limit` is reached). */
  count: boolean;
}

/**
 * Authorize for a batch of requests in ONE statement, `identity.authorize_batch`
 * (migrations 0002, 0005): for each, re-checks that the key is live, resolves the addressed
 * workspace and — when `count` is true and the key is live — counts the request in the
 * 'contract' bucket unless `limit` is reached. Each row is what the request's own
 * statement would have answered, had the batch's requests run one after another in
 * order. A revoked or unknown key is never counted; a workspace mismatch is
 * (docs/contract-gaps.md "what counts toward the 600": every request authenticated with a token of the key counts,
 * except 429s). Rows come back in the order of `items`.
 */
export async function authorizeBatch(sql: Sql, items: AuthorizeInput[], limit: number): Promise<AuthorizeRow[]> {
  // Array type oids given, not inferred: postgres.js maps element to array types only once a
  // connection has fetched them, so the first statement of a pool would send `bool`, not `bool[]`.
  const rows = await sql<AuthorizeRow[]>`
    select key_live, environment, counted, previous, now_epoch
    from identity.authorize_batch(
      ${sql.array(
        items.map((a) => a.keyId),
        OID_TEXT_ARRAY,
      )}::text[],
      ${sql.array(
        items.map((a) => a.tokenWorkspaceId),
        OID_UUID_ARRAY,
      )}::uuid[],
      ${sql.array(
        items.map((a) => a.addressedWorkspaceId),
        OID_UUID_ARRAY,
      )}::uuid[],
      ${sql.array(
        items.map((a) => a.count),
        OID_BOOL_ARRAY,
      )}::boolean[],
      ${limit}::integer)`;
  if (rows.length !== items.length) throw new Error(`authorize_batch answered ${rows.length} rows for ${items.length} requests`);
  return rows;
}

/** Deletes counters of windows before the previous one (the current and previous stay); returns how many. */
export async function deleteOldCounters(sql: Sql): Promise<number> {
  const result = await sql`
    delete from identity.rate_counters
    where window_start < identity.rate_window_start(now()) - make_interval(secs => identity.rate_window_seconds())`;
  return result.count;
}

export interface InternalClientRow {
  client_id: string;
  name: string;
  role: string;
  created_at: Date;
  revoked_at: Date | null;
}

/** Stores a marketplace client: its id, name and the SHA-256 of its token (never the token). */
export async function insertInternalClient(sql: Sql, c: { clientId: string; name: string; role: string; tokenSha256: Buffer }): Promise<InternalClientRow> {
  const [row] = await sql<InternalClientRow[]>`
    insert into identity.internal_clients (client_id, name, role, token_sha256)
    values (${c.clientId}, ${c.name}, ${c.role}, ${c.tokenSha256})
    returning client_id, name, role, created_at, revoked_at`;
  return row!;
}

/** Revokes a client, keeping the first revocation time; undefined for an unknown client. */
export async function revokeInternalClient(sql: Sql, clientId: string): Promise<InternalClientRow | undefined> {
  const [row] = await sql<InternalClientRow[]>`
    update identity.internal_clients
    set revoked_at = coalesce(revoked_at, now())
    where client_id = ${clientId}
    returning client_id, name, role, created_at, revoked_at`;
  return row;
}

/** Every client (live ones only unless `includeRevoked`), newest first. */
export async function selectInternalClients(sql: Sql, includeRevoked: boolean): Promise<InternalClientRow[]> {
  return sql<InternalClientRow[]>`
    select client_id, name, role, created_at, revoked_at
    from identity.internal_clients
    where ${includeRevoked}::boolean or revoked_at is null
    order by created_at desc, client_id desc`;
}

/** The live client whose token hashes to `tokenSha256`; undefined when none (unknown or revoked). */
export async function selectLiveClientByTokenHash(sql: Sql, tokenSha256: Uint8Array): Promise<{ client_id: string; role: string } | undefined> {
  const [row] = await sql<{ client_id: string; role: string }[]>`
    select client_id, role
    from identity.internal_clients
    where token_sha256 = ${Buffer.from(tokenSha256)} and revoked_at is null`;
  return row;
}
