/**
 * Authorize's database work, batched: the requests that arrive while one
 * `identity.authorize_batch` statement runs go into the next one (group commit,
 * services/kit/base/group-commit.ts). An idle service runs each request's statement at once;
 * a busy one runs one statement per batch instead of one per request — and a key's
 * concurrent requests no longer queue one by one on its counter row's lock (each
 * holding it until its commit): the batch takes the lock once and counts them all.
 *
 * Every request still gets exactly the answer of its own statement run in arrival order
 * (migration 0002), and the count stays exact across any number of processes: the
 * statement locks the counter rows, the processes only choose what goes together.
 */
import { GroupCommit } from '../kit/base';
import type { Sql } from '../kit/db';
import { authorizeBatch, type AuthorizeInput, type AuthorizeRow } from './queries';

/** Most requests in one statement: large enough for any burst one process sees, small enough to keep the arrays cheap. */
export const AUTHORIZE_MAX_BATCH = 256;

export class AuthorizeBatcher {
  private readonly group: GroupCommit<AuthorizeInput, AuthorizeRow>;

  /** `sql`: identity's counter pool (synchronous_commit off, IdentityDeps.counterSql). */
  constructor(sql: Sql, limit: number) {
    this.group = new GroupCommit<AuthorizeInput, AuthorizeRow>({
      maxBatch: AUTHORIZE_MAX_BATCH,
      write: (items) => authorizeBatch(sql, items, limit),
      // A failed statement is the database failing (no input of a request can break it:
      // ids are checked before, the arrays are typed): every request of it fails,
      // each mapped to UNAVAILABLE / internal by the service as before.
    });
  }

  authorize(item: AuthorizeInput): Promise<AuthorizeRow> {
    return this.group.submit(item);
  }
}
