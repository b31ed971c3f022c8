/**
 * Idempotency keys of the marketplace's writes: PlaceHold, ConfirmBooking and
 * CancelBooking (docs/marketplace.md "Idempotency keys"; table
 * `calendar.idempotency_keys`, migration 0007).
 *
 * A retry after an ambiguous failure (a timeout, a dropped connection) must not make
 * a second hold or booking, and must tell the caller which one the first attempt
 * made. With `idempotency_key` set:
 *
 * - the key is recorded, with a SHA-256 of the request without the key (and the RPC's
 *   name) and the result's id, in the SAME transaction as the write it produced;
 * - a later call by the same caller with the same key and the same request writes
 *   nothing and answers the first call's result: the same hold, the same booking
 *   reference, the same cancellation (read back as they are now);
 * - the same key with a different request (or another RPC) fails FAILED_PRECONDITION
 *   (IDEMPOTENCY_KEY_REUSED);
 * - concurrent first uses of one key are serialised by a transaction-scoped advisory
 *   lock on (caller, key), taken before the listing's lock: the loser waits, then
 *   finds the winner's row and answers its result (the primary key backs this up; a
 *   unique violation is retried by `withRetries` and finds the row the same way);
 * - a call that fails records nothing: retrying it with the same key runs it anew.
 *
 * Keys are scoped per authenticated caller (the `CALLER` context value: `marketplace`,
 * `operator`, `client:<id>` …) and kept IDEMPOTENCY_RETENTION_HOURS; the calendar's
 * housekeeping (`IdempotencyKeyPruner`, started by module.ts) deletes older ones, after
 * which the key may be used again for anything.
 *
 * The mechanism is SQL, one place (services/calendar/functions/idempotency.sql): the
 * key's lock and look-up and its record run inside each keyed writer's one statement
 * (`place_hold`, `confirm_booking`, `cancel_booking`). This file holds what TypeScript
 * decides: the key's scope and the request's fingerprint, the comparison of a found row
 * with the request, the fast-path read of a retry and the pruner.
 */
import { createHash } from 'node:crypto';
import { clone, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import type { Sql } from '../kit/db';
import type { Caller } from '../kit/rpc';
import type { Logger } from '../kit/base';
import { BatchPruner } from '../kit/work';
import { failedPrecondition } from './errors';

/** How long a key is remembered: a retry within this long answers the first result. */
export const IDEMPOTENCY_RETENTION_HOURS = 24;
/** How often expired keys are deleted, and how many per statement. */
export const IDEMPOTENCY_PRUNE_EVERY_MS = 10 * 60 * 1000;
export const IDEMPOTENCY_PRUNE_BATCH = 10_000;

/** The RPCs that take a key (also the `rpc` column's check constraint). */
export type IdempotentRpc = 'PlaceHold' | 'ConfirmBooking' | 'CancelBooking';

/** One use of a key: who, which key, and what was asked. */
export interface IdempotencyScope {
  caller: string;
  key: string;
  rpc: IdempotentRpc;
  requestSha256: Buffer;
}

/** The request fields a key-carrying request has (all three requests do). */
type Keyed = { idempotencyKey?: string };

/**
 * The scope of a request's key, or undefined without one (its shape, 1 to 255 visible
 * ASCII characters, is calendar.proto's rule). The fingerprint is the SHA-256 of the RPC's name and
 * the request's protobuf encoding with the key cleared (protobuf-es writes fields in
 * field-number order, so equal requests encode equally).
 */
export function idempotencyScope<Desc extends DescMessage>(
  rpc: IdempotentRpc,
  schema: Desc,
  req: MessageShape<Desc> & Keyed,
  caller: Caller | undefined,
): IdempotencyScope | undefined {
  if (req.idempotencyKey === undefined) return undefined;
  const bare = clone(schema, req) as MessageShape<Desc> & Keyed;
  bare.idempotencyKey = undefined;
  const requestSha256 = createHash('sha256').update(`${rpc}\n`).update(toBinary(schema, bare)).digest();
  // In-process and network callers alike have one (internal-auth.ts); '' only for a
  // server without the auth interceptor (some tests).
  return { caller: caller?.id ?? '', key: req.idempotencyKey, rpc, requestSha256 };
}

/** A key's row as stored: what it was used for and what that produced. */
export interface KeyRow {
  rpc: string;
  request_sha256: Buffer;
  result_ref: string;
}

/** The first result of `scope`'s key, or undefined if unused; throws if it was used for another request. */
export function resultOf(scope: IdempotencyScope, row: KeyRow | undefined): string | undefined {
  if (!row) return undefined;
  if (row.rpc !== scope.rpc || !Buffer.from(row.request_sha256).equals(scope.requestSha256)) {
    throw failedPrecondition(ErrorReason.IDEMPOTENCY_KEY_REUSED, `idempotency_key was already used for a different request (${row.rpc}); use a new key for a new request`);
  }
  return row.result_ref;
}

/**
 * What a keyed writer (SQL `place_hold`, `confirm_booking`, `cancel_booking`) answers
 * when the key was used before (outcome `key_found`): the key's row.
 */
export interface KeyFound {
  key_rpc: string | null;
  key_sha256: Buffer | null;
  result_ref: string | null;
}

/** The first result named by a writer's `key_found` answer; throws if the key was used for another request. */
export function resultOfKeyFound(scope: IdempotencyScope | undefined, found: KeyFound): string {
  if (!scope) throw new Error('a writer answered key_found for a request without an idempotency key');
  return resultOf(scope, { rpc: found.key_rpc!, request_sha256: found.key_sha256!, result_ref: found.result_ref! })!;
}

/**
 * The key's arguments of a keyed writer (`p_key_caller, p_key, p_key_sha256`), all
 * null without a key: the writer then takes no key lock and records nothing.
 */
export function keyArguments(sql: Sql, scope: IdempotencyScope | undefined) {
  return sql`${scope?.caller ?? null}, ${scope?.key ?? null}, ${scope?.requestSha256 ?? null}::bytea`;
}

/**
 * Outside a transaction: the key's first result, if any (the fast path of a retry),
 * through the writers' own look-up (SQL `calendar.idempotency_key`, idempotency.sql).
 */
export async function findIdempotentResult(sql: Sql, scope: IdempotencyScope): Promise<string | undefined> {
  const [row] = await sql<KeyRow[]>`select rpc, request_sha256, result_ref from calendar.idempotency_key(${scope.caller}, ${scope.key})`;
  return resultOf(scope, row);
}

/** Deletes up to `batch` keys older than `retentionHours`; returns how many. */
export async function pruneIdempotencyKeysOnce(sql: Sql, retentionHours = IDEMPOTENCY_RETENTION_HOURS, batch = IDEMPOTENCY_PRUNE_BATCH): Promise<number> {
  const [row] = await sql<{ deleted: number }[]>`
    with gone as (
      delete from calendar.idempotency_keys
      where (caller, key) in (
        select caller, key from calendar.idempotency_keys
        where created_at < now() - make_interval(hours => ${retentionHours})
        limit ${batch}
      )
      returning 1
    )
    select count(*)::int as deleted from gone`;
  return row!.deleted;
}

/** The housekeeping of keys: prunes now and every IDEMPOTENCY_PRUNE_EVERY_MS until stop(). */
export class IdempotencyKeyPruner extends BatchPruner {
  constructor(sql: Sql, log: Logger, retentionHours = IDEMPOTENCY_RETENTION_HOURS, everyMs = IDEMPOTENCY_PRUNE_EVERY_MS) {
    super({
      pruneOnce: () => pruneIdempotencyKeysOnce(sql, retentionHours),
      batch: IDEMPOTENCY_PRUNE_BATCH,
      everyMs,
      onPruned: (deleted) => log.info({ deleted, retention_hours: retentionHours }, 'calendar: idempotency keys past the retention pruned'),
      onError: (err) => log.warn({ err }, 'calendar: idempotency key pruning failed; retried later'),
    });
  }
}
