/**
 * Keeps the request log bounded (docs/operations.md "Request log"): per workspace at
 * most `maxPerWorkspace` rows, and none older than `retentionDays`. Runs in identity's
 * housekeeping on the kit's BatchPruner: bounded deletes, one warning per failed run.
 */
import type { Sql } from '../kit/db';
import type { Clock, Logger } from '../kit/base';
import { BatchPruner } from '../kit/work';
import { pruneExcessRequests, pruneOldRequests } from './request-log';

/** Rows kept per workspace. */
export const REQUEST_LOG_MAX_PER_WORKSPACE = 10_000;
/** Days a row is kept. */
export const REQUEST_LOG_RETENTION_DAYS = 14;
/** Rows deleted per statement. */
const PRUNE_BATCH = 1000;
/** How often the pruner runs. */
const PRUNE_EVERY_MS = 10 * 60 * 1000;

export interface RequestLogBounds {
  maxPerWorkspace: number;
  retentionDays: number;
}

/** One bounded step: the aged rows first, then each workspace's excess; the rows deleted. */
export async function pruneRequestLogOnce(sql: Sql, bounds: RequestLogBounds, batch = PRUNE_BATCH): Promise<number> {
  const old = await pruneOldRequests(sql, bounds.retentionDays, batch);
  if (old >= batch) return old;
  return old + (await pruneExcessRequests(sql, bounds.maxPerWorkspace, batch - old));
}

export class RequestLogPruner extends BatchPruner {
  constructor(
    sql: Sql,
    log: Logger,
    bounds: RequestLogBounds = { maxPerWorkspace: REQUEST_LOG_MAX_PER_WORKSPACE, retentionDays: REQUEST_LOG_RETENTION_DAYS },
    everyMs = PRUNE_EVERY_MS,
    clock?: Clock,
  ) {
    super({
      pruneOnce: () => pruneRequestLogOnce(sql, bounds),
      batch: PRUNE_BATCH,
      everyMs,
      name: 'request-log-pruner',
      clock,
      onPruned: (deleted) => log.info({ deleted, ...bounds }, 'identity: request log pruned'),
      onError: (err) => log.warn({ err }, 'identity: request log pruning failed; retried later'),
    });
  }
}
