/**
 * The kit's lease queue (services/kit/work/lease-queue.ts) on a table of its own, against
 * the real database (PostgreSQL with DATABASE_URL, embedded PGlite otherwise): a claim
 * serves the groups through the queue's fairness rules and leases what it takes; leased
 * rows and rows another transaction locks are not taken; a release gives a row back (at
 * once or due later) only under its token; renew extends leases; releaseAll clears them.
 */
import { randomUUID } from 'node:crypto';
import { LeaseQueue } from '../../services/kit/work';
import { createSql } from '../../services/kit/db';
import { startTestDatabase, type TestDatabase } from '../support/database';

jest.setTimeout(60_000);

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

const queue = new LeaseQueue({ table: 'q.jobs', key: ['id'], group: 'workspace_id', owner: 'lease_owner', due: 'next_attempt_at' });

interface Job {
  id: number;
  workspace_id: string;
}

let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
  await db.sql`create schema q`;
  await db.sql`
    create table q.jobs (
      id int primary key,
      workspace_id uuid not null,
      state text not null default 'pending',
      next_attempt_at timestamptz not null default now(),
      lease_owner uuid,
      lease_until timestamptz,
      claims int not null default 0
    )`;
});

afterAll(async () => {
  await db?.stop();
});

beforeEach(async () => {
  await db.sql`truncate q.jobs`;
});

/** Round-robin across groups (every group's first before anyone's second), at most `perGroup` of a group less what is busy, `free` in all. */
function claim(sql: TestDatabase['sql'], free: number, perGroup = 10, busy: [string, number][] = []) {
  const token = randomUUID();
  return queue
    .claim<Job>(sql, {
      token,
      leaseSeconds: 60,
      busy,
      slow: [],
      rules: sql`eps as (
        select ws.workspace_id, ${perGroup}::int - coalesce(u.n, 0) as room from ws
        left join used u on u.workspace_id = ws.workspace_id
        where ws.workspace_id is not null
      ), cand as (
        select x.id, row_number() over (partition by eps.workspace_id order by x.id) as turn
        from eps cross join lateral (
          select j.id from q.jobs j
          where j.workspace_id = eps.workspace_id and ${queue.free(sql, 'j')} and j.next_attempt_at <= now()
          order by j.id limit greatest(eps.room, 0)
        ) x
      ), chosen as (
        select id from cand order by turn, id limit ${free}
      )`,
      take: sql`select id from chosen`,
      set: sql`claims = t.claims + 1`,
      returning: sql`t.id, t.workspace_id`,
      result: sql`select id, workspace_id from leased order by id`,
    })
    .then((rows) => ({ token, ids: rows.map((r) => r.id) }));
}

async function seed(rows: [number, string][]): Promise<void> {
  for (const [id, ws] of rows) await db.sql`insert into q.jobs (id, workspace_id) values (${id}, ${ws})`;
}

test('a claim serves the groups round-robin within its rules, leases what it takes, and never takes a leased row', async () => {
  await seed([
    [1, A],
    [2, A],
    [3, A],
    [4, B],
    [5, C],
    [6, C],
  ]);
  const first = await claim(db.sql, 4);
  expect(first.ids).toEqual([1, 2, 4, 5]); // every group's first (1, 4, 5), then the lowest id of the second turn (2, not 6)
  const leased = await db.sql<{ id: number; lease_owner: string; claims: number }[]>`select id, lease_owner, claims from q.jobs where lease_owner is not null order by id`;
  expect(leased.map((r) => [r.id, r.lease_owner, r.claims])).toEqual([1, 2, 4, 5].map((id) => [id, first.token, 1]));
  expect((await claim(db.sql, 10)).ids).toEqual([3, 6]);
  expect((await claim(db.sql, 10)).ids).toEqual([]);
  // What this process has in flight counts against a group's room.
  await db.sql`update q.jobs set lease_owner = null, lease_until = null`;
  expect((await claim(db.sql, 10, 1, [[A, 1]])).ids).toEqual([4, 5]);
});

test('an expired lease is claimed again', async () => {
  await seed([[1, A]]);
  await claim(db.sql, 1);
  await db.sql`update q.jobs set lease_until = now() - interval '1 second'`;
  expect((await claim(db.sql, 1)).ids).toEqual([1]);
});

test('release: only under its token; free at once, or due only later; held says whose the lease is', async () => {
  await seed([
    [1, A],
    [2, B],
  ]);
  const { token } = await claim(db.sql, 2);
  const [mine] = await db.sql`select 1 from q.jobs t where t.id = 1 and ${queue.held(db.sql, 't', token)}`;
  expect(mine).toBeDefined();
  await queue.release(db.sql, { id: '1' }, randomUUID());
  expect((await claim(db.sql, 2)).ids).toEqual([]);
  await queue.release(db.sql, { id: '1' }, token);
  await queue.release(db.sql, { id: '2' }, token, { retryInS: 60 });
  const rows = await db.sql<{ id: number; lease_owner: string | null; later: boolean }[]>`
    select id, lease_owner, next_attempt_at > now() + interval '50 seconds' as later from q.jobs order by id`;
  expect(rows.map((r) => [r.id, r.lease_owner, r.later])).toEqual([
    [1, null, false],
    [2, null, true],
  ]);
  expect((await claim(db.sql, 2)).ids).toEqual([1]);
});

test('renew extends the leases of the tokens given; releaseAll clears every lease of a pending row', async () => {
  await seed([
    [1, A],
    [2, B],
  ]);
  const { token } = await claim(db.sql, 1);
  await claim(db.sql, 1);
  await db.sql`update q.jobs set lease_until = now() + interval '1 second'`;
  await queue.renew(db.sql, [token], 600);
  await queue.renew(db.sql, [], 600);
  const rows = await db.sql<{ id: number; long: boolean }[]>`select id, lease_until > now() + interval '500 seconds' as long from q.jobs order by id`;
  expect(rows.map((r) => [r.id, r.long])).toEqual([
    [1, true],
    [2, false],
  ]);
  expect(await queue.releaseAll(db.sql)).toBe(2);
  expect((await claim(db.sql, 2)).ids).toEqual([1, 2]);
});

// PGlite has one session: a second transaction needs a server (DATABASE_URL).
const withServer = process.env.DATABASE_URL ? test : test.skip;

withServer('a row another transaction has locked is passed over, not waited for (needs DATABASE_URL)', async () => {
  await seed([
    [1, A],
    [2, B],
  ]);
  const other = createSql(db.url, { max: 1 });
  try {
    let unlock!: () => void;
    const held = new Promise<void>((r) => (unlock = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const tx = other.begin(async (t) => {
      await t`select id from q.jobs where id = 1 for update`;
      locked();
      await held;
    });
    await isLocked;
    expect((await claim(db.sql, 2)).ids).toEqual([2]);
    unlock();
    await tx;
    expect((await claim(db.sql, 2)).ids).toEqual([1]);
  } finally {
    await other.end({ timeout: 5 });
  }
});
