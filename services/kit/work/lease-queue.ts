/**
 * The lease queue: a table whose `pending` rows are work, claimed fairly by any number of
 * replicas, leased while the work runs, completed, retried later or released.
 *
 * A queue table has a `state` column (`'pending'` is work), a lease owner column (the
 * claim's token) and `lease_until`. A row is free when it is pending and not leased (or
 * its lease ran out). A claim is one statement:
 * 1. groups: the fairness groups (workspaces) that have pending rows, by a skip scan of
 *    an index on the group column (one index probe per group, however long its backlog);
 * 2. inputs: what this process has in flight per group (`used`) and the groups that draw
 *    from the slow lane (`slow`);
 * 3. the queue's own fairness rules (its CTEs, `ws`, `used` and `slow` in scope), which
 *    end in the rows to take;
 * 4. locked/leased: those rows are locked, skipping rows another replica is locking and
 *    re-checking that they are still free under the lock, and leased to this claim's
 *    token for `leaseSeconds`.
 * So replicas never take the same row at once, and a process that dies leaves its leases
 * to run out: the rows are claimed again (at-least-once). The work is completed by a
 * statement of the queue's own that checks it still holds the lease (`held`); released
 * (shutdown, a failure that is ours) with `release`, optionally due again only later;
 * leases of slow work are extended with `renew`; a sole worker (the embedded database)
 * releases what a previous run left with `releaseAll`.
 *
 * `lockRows` is the locking step alone, for work held by a transaction instead of a
 * lease (the outbox relay) and for sweeps that settle rows in the same statement.
 */
import type postgres from 'postgres';

/** The postgres.js instance (or a reserved connection) or a transaction: anything that builds statements. */
type Sql = postgres.Sql<Record<string, never>> | postgres.TransactionSql<Record<string, never>>;
/** A statement or a fragment of one. */
type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A table used as a lease queue. */
export interface LeaseQueueSpec {
  /** `schema.table`. */
  table: string;
  /** Its primary key columns. */
  key: readonly string[];
  /** The fairness group column (a claim serves the groups round-robin). */
  group: string;
  /** The lease owner column (the claim's token). */
  owner: string;
  /** The column saying when a pending row is due, for `release` with `retryInS`; none: always due. */
  due?: string;
}

/** What `lockRows` locks. */
export interface LockRows {
  /** The columns selected. */
  columns: Fragment;
  /** The `from` clause (tables, joins). */
  from: Fragment;
  /** The alias of the table whose rows are locked. */
  of: string;
  where: Fragment;
  orderBy?: Fragment;
  limit?: number;
}

/**
 * A `select … for update of … skip locked`: rows another transaction is locking are
 * skipped rather than waited for, so concurrent claims each take different rows.
 */
export function lockRows(sql: Sql, q: LockRows): Fragment {
  const orderBy = q.orderBy ? sql`order by ${q.orderBy}` : sql``;
  const limit = q.limit !== undefined ? sql`limit ${q.limit}` : sql``;
  return sql`select ${q.columns} from ${q.from} where ${q.where} ${orderBy} ${limit} for update of ${sql(q.of)} skip locked`;
}

/** One claim's parameters (see the module comment for the statement's shape). */
export interface ClaimSpec {
  /** This claim's lease owner. */
  token: string;
  leaseSeconds: number;
  /** Work in flight in this process per group (group → count): the `used(<group>, n)` input. */
  busy: readonly (readonly [string, number])[];
  /** Groups drawing from the slow lane: the `slow(<group>)` input. */
  slow: readonly string[];
  /** The queue's fairness rules: CTEs (`name as (…), …`) reading `ws`, `used` and `slow`. */
  rules: Fragment;
  /** A `select` of the key columns of the rows to take, from the rules' CTEs. */
  take: Fragment;
  /** Further columns the lease sets (`col = expr, …`); the leased row is `t`. */
  set?: Fragment;
  /** The columns `leased` returns (of `t`). */
  returning: Fragment;
  /** The statement's result, read from `leased` (and the rules' CTEs). */
  result: Fragment;
}

/** A table used as a lease queue: its claim, lease and release statements. */
export class LeaseQueue {
  constructor(readonly spec: LeaseQueueSpec) {}

  /** Pending and not leased (or its lease ran out); `alias` is the table's alias in the statement. */
  free(sql: Sql, alias: string): Fragment {
    const t = sql(alias);
    return sql`${t}.state = 'pending' and (${t}.lease_until is null or ${t}.lease_until < now())`;
  }

  /** Pending and leased to `token` (a value, or an expression of the statement): the condition a completion writes under. */
  held(sql: Sql, alias: string, token: string | Fragment): Fragment {
    const t = sql(alias);
    return sql`${t}.${sql(this.spec.owner)} = ${token} and ${t}.state = 'pending'`;
  }

  /** Claims and leases rows in one statement (module comment); resolves with `result`'s rows. */
  claim<R extends object>(sql: Sql, c: ClaimSpec): Promise<R[]> {
    const { table, key, group } = this.spec;
    const g = sql(group);
    const keys = sql`${sql(key.map((k) => `l.${k}`))}`;
    const joined = key.map((k) => sql`${sql(`t.${k}`)} = ${sql(`locked.${k}`)}`).reduce((a, b) => sql`${a} and ${b}`);
    const set = c.set ? sql`, ${c.set}` : sql``;
    return sql<R[]>`
      with recursive ws(${g}) as (
        (select ${g} from ${sql(table)} where state = 'pending' and ${g} is not null order by ${g} limit 1)
        union all
        select (select q.${g} from ${sql(table)} q where q.state = 'pending' and q.${g} > ws.${g} order by q.${g} limit 1)
        from ws where ws.${g} is not null
      ), used as (
        select * from unnest(${sql.array(c.busy.map(([w]) => w))}::uuid[], ${sql.array(c.busy.map(([, n]) => n))}::int[]) as u(${g}, n)
      ), slow as (
        select * from unnest(${sql.array([...c.slow])}::uuid[]) as s(${g})
      ), ${c.rules}, locked as (
        ${lockRows(sql, { columns: keys, from: sql`${sql(table)} l`, of: 'l', where: sql`(${keys}) in (${c.take}) and ${this.free(sql, 'l')}` })}
      ), leased as (
        update ${sql(table)} t
        set ${sql(this.spec.owner)} = ${c.token}, lease_until = ${leaseEnd(sql, c.leaseSeconds)}${set}
        from locked where ${joined}
        returning ${c.returning}
      )
      ${c.result}`;
  }

  /**
   * Gives a claimed row back without an outcome (shutdown, a failure on this side): free
   * again at once, or due only in `retryInS` seconds. Nothing happens if the lease is no
   * longer this token's.
   */
  async release(sql: Sql, key: Readonly<Record<string, string>>, token: string, opts: { retryInS?: number } = {}): Promise<void> {
    const { due, owner } = this.spec;
    if (opts.retryInS !== undefined && !due) throw new Error(`LeaseQueue ${this.spec.table}: no due column to retry later by`);
    const later = opts.retryInS !== undefined ? sql`, ${sql(due!)} = now() + ${opts.retryInS}::float8 * interval '1 second'` : sql``;
    await sql`
      update ${sql(this.spec.table)} t set ${sql(owner)} = null, lease_until = null${later}
      where ${this.keyIs(sql, key)} and ${this.held(sql, 't', token)}`;
  }

  /** Releases every lease (a sole worker at start: whatever is leased, a previous run left); returns how many. */
  async releaseAll(sql: Sql): Promise<number> {
    const owner = sql(this.spec.owner);
    const r = await sql`update ${sql(this.spec.table)} set ${owner} = null, lease_until = null where state = 'pending' and ${owner} is not null`;
    return r.count;
  }

  /** Extends the leases of `tokens` by `leaseSeconds` from now, so slow work is not claimed again meanwhile. */
  async renew(sql: Sql, tokens: readonly string[], leaseSeconds: number): Promise<void> {
    if (tokens.length === 0) return;
    await sql`
      update ${sql(this.spec.table)} set lease_until = ${leaseEnd(sql, leaseSeconds)}
      where ${sql(this.spec.owner)} in ${sql([...tokens])} and state = 'pending'`;
  }

  private keyIs(sql: Sql, key: Readonly<Record<string, string>>): Fragment {
    return this.spec.key.map((k) => sql`t.${sql(k)} = ${key[k] ?? null}`).reduce((a, b) => sql`${a} and ${b}`);
  }
}

/** When a lease taken now ends. */
function leaseEnd(sql: Sql, seconds: number): Fragment {
  return sql`now() + ${seconds}::float8 * interval '1 second'`;
}
