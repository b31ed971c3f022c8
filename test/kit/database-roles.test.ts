/**
 * One PostgreSQL role per service (services/kit/db/database-roles.ts), on a real server:
 * the administrator (DATABASE_URL) creates the roles, each service migrates as its
 * own role, and each role reaches its own schema only — for every ordered pair of
 * services, selecting from, inserting into and creating in another service's schema
 * fails with 42501. Also: provisioning twice changes nothing, an installation
 * migrated by the administrator is taken over, a new password in a URL is applied,
 * a non-superuser administrator (CREATEROLE, owning the database) works, and the
 * system starts on the per-service URLs (`main.ts migrate`, role all, role catalog).
 *
 * Roles are cluster-wide: their names are random per run, and they are dropped in
 * afterAll after the scratch databases that hold their objects.
 */
import { randomBytes } from 'node:crypto';
import { createSql, KIT_MIGRATIONS, loadBaseline, openDatabase, SERVICE_NAMES, type Database, type DatabaseSettings, type Sql } from '../../services/kit/db';
import { provisionServiceRoles, verifierMatches } from '../../services/kit/db';
import { createLogger } from '../../services/kit/base';
import { migrateAll } from '../../services/kit/runtime';
import type { ServiceModule } from '../../services/kit/runtime';
import type { ServiceName } from '../../services/kit/base';
import { identityModule } from '../../services/identity/module';
import { catalogModule } from '../../services/catalog/module';
import { calendarModule } from '../../services/calendar/module';
import { notificationsModule } from '../../services/notifications/module';
import { createScratchDatabase, firstLogEvent, logEvents, runMain, startSystem, stopAllSystems, type ScratchDatabase } from '../support/system';

const ADMIN_URL = process.env.DATABASE_URL;
const onServer = ADMIN_URL ? describe : describe.skip;

const MODULES: ServiceModule[] = [identityModule, catalogModule, calendarModule, notificationsModule];
const log = createLogger({ level: 'silent', name: 'test' });
const run = randomBytes(4).toString('hex');
/** This run's role of each service (cluster-wide names, hence random). */
const ROLE = Object.fromEntries(SERVICE_NAMES.map((s) => [s, `psync_t${run}_${s}`])) as Record<ServiceName, string>;
const NON_SUPERUSER_ADMIN = `psync_t${run}_admin`;
const SCRAM_PROBE = `psync_t${run}_scram`;
const password = () => randomBytes(12).toString('hex');

/** `url` (a database) with `user:pass` as its credentials. */
function withUser(url: string, user: string, pass?: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = pass ?? '';
  return u.toString();
}

/** The per-service URL settings for `dbUrl`, with the given passwords. */
function serviceUrls(
  dbUrl: string,
  passwords: Record<ServiceName, string>,
): Pick<DatabaseSettings, 'identityDatabaseUrl' | 'catalogDatabaseUrl' | 'calendarDatabaseUrl' | 'notificationsDatabaseUrl'> {
  return {
    identityDatabaseUrl: withUser(dbUrl, ROLE.identity, passwords.identity),
    catalogDatabaseUrl: withUser(dbUrl, ROLE.catalog, passwords.catalog),
    calendarDatabaseUrl: withUser(dbUrl, ROLE.calendar, passwords.calendar),
    notificationsDatabaseUrl: withUser(dbUrl, ROLE.notifications, passwords.notifications),
  };
}

/** The URL of `service`'s role on `dbUrl`. */
function serviceUrl(dbUrl: string, service: ServiceName, passwords: Record<ServiceName, string>): string {
  return withUser(dbUrl, ROLE[service], passwords[service]);
}

/** Opens a Database on `settings`, runs migrateAll over the real modules, closes it. */
async function migrate(settings: Omit<DatabaseSettings, 'dataDir' | 'databasePoolSize'>): Promise<void> {
  const db: Database = await openDatabase({ ...settings, dataDir: '/nonexistent', databasePoolSize: 2 }, log, SERVICE_NAMES);
  try {
    await migrateAll(db, MODULES, log);
  } finally {
    await db.close();
  }
}

/** The SQLSTATE a query fails with, or 'ok'. */
async function sqlstate(query: PromiseLike<unknown>): Promise<string> {
  try {
    await query;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

/** Runs `fn` with a connection as `role` to `dbUrl`. */
async function asRole<T>(dbUrl: string, role: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = createSql(withUser(dbUrl, role), { max: 1, applicationName: `test-${role}` });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Every schema, relation, routine and type in the service schemas whose owner is not the service's role. */
async function foreignOwned(admin: Sql, owners: Record<ServiceName, string>): Promise<string[]> {
  const rows = await admin<{ schema: ServiceName; kind: string; name: string; owner: string }[]>`
    select n.nspname as schema, x.kind, x.name, x.owner from (
      select c.relnamespace as nsp, 'relation' as kind, c.oid::regclass::text as name, c.relowner::regrole::text as owner from pg_class c
      union all select p.pronamespace, 'routine', p.oid::regprocedure::text, p.proowner::regrole::text from pg_proc p
      union all select t.typnamespace, 'type', t.oid::regtype::text, t.typowner::regrole::text from pg_type t
      union all select oid, 'schema', nspname, nspowner::regrole::text from pg_namespace
    ) x join pg_namespace n on n.oid = x.nsp
    where n.nspname in ${admin(SERVICE_NAMES)}`;
  expect(rows.length).toBeGreaterThan(100);
  expect(rows.filter((r) => r.kind === 'routine' && r.schema === 'calendar').length).toBeGreaterThan(5);
  return rows.filter((r) => r.owner !== owners[r.schema]).map((r) => `${r.kind} ${r.name} owned by ${r.owner}`);
}

/**
 * What each role may do, as `<role's service> → <schema> <operation>: sqlstate`:
 * on its own schema select/insert/delete on a migrated table and create/drop a table;
 * on each other schema select, insert, create, and SET ROLE to that service's role.
 */
async function accessMatrix(dbUrl: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const me of SERVICE_NAMES) {
    await asRole(dbUrl, ROLE[me], async (sql) => {
      const own = (t: string) => sql(`${me}.${t}`);
      out[`${me} → ${me} select`] = await sqlstate(sql`select count(*) from ${own('schema_migrations')}`);
      out[`${me} → ${me} insert`] = await sqlstate(sql`insert into ${own('schema_migrations')} (id, checksum) values ('probe/1', 'x')`);
      out[`${me} → ${me} delete`] = await sqlstate(sql`delete from ${own('schema_migrations')} where id = 'probe/1'`);
      out[`${me} → ${me} create`] = await sqlstate(sql`create table ${own('probe')} (id int)`);
      out[`${me} → ${me} drop`] = await sqlstate(sql`drop table ${own('probe')}`);
      for (const other of SERVICE_NAMES.filter((s) => s !== me)) {
        const theirs = (t: string) => sql(`${other}.${t}`);
        out[`${me} → ${other} select`] = await sqlstate(sql`select count(*) from ${theirs('schema_migrations')}`);
        out[`${me} → ${other} insert`] = await sqlstate(sql`insert into ${theirs('schema_migrations')} (id, checksum) values ('probe/1', 'x')`);
        out[`${me} → ${other} create`] = await sqlstate(sql`create table ${theirs('probe')} (id int)`);
        out[`${me} → ${other} set role`] = await sqlstate(sql`set role ${sql(ROLE[other])}`);
      }
    });
  }
  return out;
}

/** The matrix every provisioned database must show. */
function expectedMatrix(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const me of SERVICE_NAMES) {
    for (const op of ['select', 'insert', 'delete', 'create', 'drop']) out[`${me} → ${me} ${op}`] = 'ok';
    for (const other of SERVICE_NAMES.filter((s) => s !== me)) {
      for (const op of ['select', 'insert', 'create', 'set role']) out[`${me} → ${other} ${op}`] = '42501';
    }
  }
  return out;
}

/** Owners and ACLs of the service schemas and their relations (to compare runs). */
async function privilegesSnapshot(admin: Sql): Promise<unknown[]> {
  return [
    ...(await admin`
    select n.nspname, n.nspowner::regrole::text as nspowner, n.nspacl::text, c.relname, c.relowner::regrole::text as relowner, c.relacl::text
    from pg_namespace n left join pg_class c on c.relnamespace = n.oid
    where n.nspname in ${admin(SERVICE_NAMES)} order by 1, 4`),
  ];
}

describe('per-service database URLs (no server needed: postgres.js connects lazily)', () => {
  const base = { dataDir: '/nonexistent', databasePoolSize: 1 };
  const catalogOnly = { ...base, catalogDatabaseUrl: 'postgres://psync_catalog:pw@db.example:5432/psync' };

  test('a per-service URL alone means a PostgreSQL server, used by that service only', async () => {
    const db = await openDatabase(catalogOnly, log, ['catalog']);
    try {
      expect(db.kind).toBe('postgresql');
      expect(db.roles).toBeUndefined();
      expect(() => db.sqlFor('identity')).toThrow('no database URL for the identity service: set IDENTITY_DATABASE_URL or DATABASE_URL');
      expect(db.sqlFor('catalog')).toBe(db.sqlFor('catalog'));
    } finally {
      await db.close();
    }
  });

  test('a hosted service without any URL is refused at open', async () => {
    await expect(openDatabase(catalogOnly, log, ['catalog', 'calendar'])).rejects.toThrow('no database URL for the calendar service');
  });

  test('DATABASE_URL with per-service URLs: the administrator and the services that have their own role', async () => {
    const db = await openDatabase({ ...catalogOnly, databaseUrl: 'postgres://admin@db.example:5432/psync' }, log, SERVICE_NAMES);
    try {
      expect(db.kind).toBe('postgresql');
      expect([...db.roles!.serviceUrls.keys()]).toEqual(['catalog']);
      expect(db.sqlFor('identity')).not.toBe(db.sqlFor('catalog'));
    } finally {
      await db.close();
    }
  });

  test('DATABASE_URL naming the same user as the service URL (a Deployment given its URL under both names): no role set-up', async () => {
    const db = await openDatabase({ ...catalogOnly, databaseUrl: catalogOnly.catalogDatabaseUrl }, log, ['catalog']);
    try {
      expect(db.kind).toBe('postgresql');
      expect(db.roles).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  test('DATABASE_URL alone (the all-in-one on one role): no role set-up', async () => {
    const db = await openDatabase({ ...base, databaseUrl: 'postgres://admin@db.example:5432/psync' }, log, SERVICE_NAMES);
    try {
      expect(db.roles).toBeUndefined();
    } finally {
      await db.close();
    }
  });
});

onServer('least-privilege database roles (needs DATABASE_URL: roles exist on a PostgreSQL server only; skipped otherwise)', () => {
  const scratches: ScratchDatabase[] = [];
  const admins: Sql[] = [];
  const passwords = Object.fromEntries(SERVICE_NAMES.map((s) => [s, password()])) as Record<ServiceName, string>;
  let fresh: ScratchDatabase;
  let freshAdmin: Sql;

  async function scratch(): Promise<{ db: ScratchDatabase; admin: Sql }> {
    const db = await createScratchDatabase(ADMIN_URL);
    scratches.push(db);
    const admin = createSql(db.url, { max: 1, applicationName: 'test-admin' });
    admins.push(admin);
    return { db, admin };
  }

  beforeAll(async () => {
    ({ db: fresh, admin: freshAdmin } = await scratch());
    await migrate({ databaseUrl: fresh.url, ...serviceUrls(fresh.url, passwords) });
  });

  afterAll(async () => {
    await stopAllSystems();
    await Promise.all(admins.map((a) => a.end({ timeout: 5 })));
    for (const db of scratches) await db.drop();
    const server = createSql(ADMIN_URL!, { max: 1 });
    try {
      for (const role of [...Object.values(ROLE), NON_SUPERUSER_ADMIN, SCRAM_PROBE]) await server`drop role if exists ${server(role)}`;
    } finally {
      await server.end({ timeout: 5 });
    }
  });

  test('each role is a plain login role and owns its schema and everything the migrations created in it', async () => {
    const roles = await freshAdmin<{ rolname: string; rolsuper: boolean; rolcreatedb: boolean; rolcreaterole: boolean; rolinherit: boolean; rolcanlogin: boolean }[]>`
      select rolname, rolsuper, rolcreatedb, rolcreaterole, rolinherit, rolcanlogin from pg_roles where rolname in ${freshAdmin(Object.values(ROLE))}`;
    expect(roles).toHaveLength(4);
    for (const r of roles) expect(r).toEqual({ rolname: r.rolname, rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolinherit: false, rolcanlogin: true });
    expect(await foreignOwned(freshAdmin, ROLE)).toEqual([]);
    // Every migration ran (as the service role: it owns what they created): the baselines recorded the landed migrations they replace.
    const modules = { identity: identityModule, catalog: catalogModule, calendar: calendarModule, notifications: notificationsModule };
    for (const s of SERVICE_NAMES) {
      const ids = (await freshAdmin<{ id: string }[]>`select id from ${freshAdmin(`${s}.schema_migrations`)}`).map((r) => r.id);
      const replaced = [KIT_MIGRATIONS, modules[s].migrations].flatMap((source) => [...loadBaseline(source)!.replaces.keys()]);
      expect(ids).toEqual(expect.arrayContaining(replaced));
    }
    const [acl] = await freshAdmin<{ public_usage: boolean }[]>`
      select bool_or(has_schema_privilege('public', n.oid, 'USAGE')) as public_usage from pg_namespace n where nspname in ${freshAdmin(SERVICE_NAMES)}`;
    expect(acl!.public_usage).toBe(false);
  });

  test('each role reads and writes its own schema and cannot select, insert, create in or SET ROLE into any other (42501), for every ordered pair', async () => {
    expect(await accessMatrix(fresh.url)).toEqual(expectedMatrix());
  });

  test('provisioning and migrating again changes nothing', async () => {
    const before = await privilegesSnapshot(freshAdmin);
    const results = await provisionServiceRoles(
      freshAdmin,
      SERVICE_NAMES.map((s) => ({ service: s, url: serviceUrl(fresh.url, s, passwords) })),
    );
    expect(results).toEqual(SERVICE_NAMES.map((s) => ({ service: s, role: ROLE[s], created: false, passwordChanged: false, ownershipMoved: 0 })));
    await migrate({ databaseUrl: fresh.url, ...serviceUrls(fresh.url, passwords) });
    expect(await privilegesSnapshot(freshAdmin)).toEqual(before);
  });

  test("grants on another service's schema and membership in another service's role are removed", async () => {
    await freshAdmin`grant usage on schema identity to ${freshAdmin(ROLE.catalog)}`;
    await freshAdmin`grant select, insert on all tables in schema identity to ${freshAdmin(ROLE.catalog)}`;
    await freshAdmin`grant ${freshAdmin(ROLE.calendar)} to ${freshAdmin(ROLE.catalog)}`;
    expect(await asRole(fresh.url, ROLE.catalog, (sql) => sqlstate(sql`select count(*) from identity.schema_migrations`))).toBe('ok');

    await provisionServiceRoles(
      freshAdmin,
      SERVICE_NAMES.map((s) => ({ service: s, url: serviceUrl(fresh.url, s, passwords) })),
    );
    expect(await accessMatrix(fresh.url)).toEqual(expectedMatrix());
  });

  test('a new password in a service URL is applied (and only that role changes)', async () => {
    const rotated = { ...passwords, catalog: password() };
    const results = await provisionServiceRoles(
      freshAdmin,
      SERVICE_NAMES.map((s) => ({ service: s, url: serviceUrl(fresh.url, s, rotated) })),
    );
    expect(results.map((r) => [r.service, r.passwordChanged])).toEqual(SERVICE_NAMES.map((s) => [s, s === 'catalog']));
    const verifier = async (s: ServiceName) => (await freshAdmin<{ v: string }[]>`select rolpassword as v from pg_authid where rolname = ${ROLE[s]}`)[0]!.v;
    // The server here trusts local connections, so the stored SCRAM verifier is what proves it.
    expect(verifierMatches(await verifier('catalog'), rotated.catalog)).toBe(true);
    expect(verifierMatches(await verifier('catalog'), passwords.catalog)).toBe(false);
    expect(verifierMatches(await verifier('identity'), passwords.identity)).toBe(true);
    passwords.catalog = rotated.catalog;
  });

  test('the SCRAM verifier computed here is the one PostgreSQL computes from the plain password', async () => {
    const plain = `${password()}-x'y`;
    await freshAdmin`create role ${freshAdmin(SCRAM_PROBE)}`;
    await freshAdmin.begin(async (tx) => {
      await tx`set local password_encryption = 'scram-sha-256'`;
      await tx.unsafe(`alter role "${SCRAM_PROBE}" password '${plain.replace(/'/g, "''")}'`);
    });
    const [row] = await freshAdmin<{ v: string }[]>`select rolpassword as v from pg_authid where rolname = ${SCRAM_PROBE}`;
    expect(row!.v).toMatch(/^SCRAM-SHA-256\$4096:/);
    expect(verifierMatches(row!.v, plain)).toBe(true);
    expect(verifierMatches(row!.v, `${plain}!`)).toBe(false);
  });

  test('an installation migrated by the administrator alone is taken over by the service roles', async () => {
    const { db, admin } = await scratch();
    await migrate({ databaseUrl: db.url });
    const adminName = (await admin<{ u: string }[]>`select current_user as u`)[0]!.u;
    expect((await foreignOwned(admin, ROLE)).length).toBeGreaterThan(100);

    await migrate({ databaseUrl: db.url, ...serviceUrls(db.url, passwords) });
    expect(await foreignOwned(admin, ROLE)).toEqual([]);
    expect(JSON.stringify(await privilegesSnapshot(admin))).not.toContain(`${adminName}=`);
    expect(await accessMatrix(db.url)).toEqual(expectedMatrix());
  });

  test('a non-superuser administrator (CREATEROLE, owning the database) provisions a fresh and a taken-over installation', async () => {
    const { db, admin } = await scratch();
    const adminPassword = password();
    await admin`create role ${admin(NON_SUPERUSER_ADMIN)} login createrole`;
    await admin`alter database ${admin(db.name)} owner to ${admin(NON_SUPERUSER_ADMIN)}`;
    const adminUrl = withUser(db.url, NON_SUPERUSER_ADMIN, adminPassword);

    // The all-in-one first (the administrator owns everything), then the roles.
    await migrate({ databaseUrl: adminUrl });
    await migrate({ databaseUrl: adminUrl, ...serviceUrls(db.url, passwords) });
    expect(await foreignOwned(admin, ROLE)).toEqual([]);
    expect(await accessMatrix(db.url)).toEqual(expectedMatrix());
    // The temporary CREATE on the database (to move a schema) was taken back.
    const [row] = await admin<{ n: number }[]>`
      select count(*)::int as n from pg_roles where rolname in ${admin(Object.values(ROLE))} and has_database_privilege(rolname, current_database(), 'CREATE')`;
    expect(row!.n).toBe(0);
  });

  test('a URL naming the administrator, a shared role or another database is refused before anything changes', async () => {
    const url = (s: ServiceName) => serviceUrl(fresh.url, s, passwords);
    const adminName = (await freshAdmin<{ u: string }[]>`select current_user as u`)[0]!.u;
    await expect(provisionServiceRoles(freshAdmin, [{ service: 'catalog', url: withUser(fresh.url, adminName, 'x') }])).rejects.toThrow(/administrator/);
    await expect(
      provisionServiceRoles(freshAdmin, [
        { service: 'catalog', url: url('catalog') },
        { service: 'calendar', url: withUser(fresh.url, ROLE.catalog, 'x') },
      ]),
    ).rejects.toThrow(/same role/);
    const elsewhere = new URL(url('catalog'));
    elsewhere.pathname = '/postgres';
    await expect(provisionServiceRoles(freshAdmin, [{ service: 'catalog', url: elsewhere.toString() }])).rejects.toThrow(/must be the same/);
    await expect(provisionServiceRoles(freshAdmin, [{ service: 'catalog', url: withUser(fresh.url, 'Bad-Name', 'x') }])).rejects.toThrow(/CATALOG_DATABASE_URL/);
  });

  test('main.ts migrate creates the roles; role all then runs on the per-service URLs, and role catalog on CATALOG_DATABASE_URL alone or under both names', async () => {
    const { db, admin } = await scratch();
    const urls = serviceUrls(db.url, passwords);
    const env = {
      IDENTITY_DATABASE_URL: urls.identityDatabaseUrl!,
      CATALOG_DATABASE_URL: urls.catalogDatabaseUrl!,
      CALENDAR_DATABASE_URL: urls.calendarDatabaseUrl!,
      NOTIFICATIONS_DATABASE_URL: urls.notificationsDatabaseUrl!,
    };
    const migrated = await runMain(['migrate'], { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: db.url, ...env });
    expect({ code: migrated.code, stderr: migrated.stderr }).toMatchObject({ code: 0 });
    expect(JSON.parse(migrated.stdout)).toEqual({ migrated: true, schemas: SERVICE_NAMES });
    expect(await foreignOwned(admin, ROLE)).toEqual([]);

    const all = await startSystem({ env: { DATABASE_URL: db.url, ...env } });
    const ready = await fetch(`${all.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    // Each service's pool connects as the service's own role.
    const sessions = await admin<{ application_name: string; usename: string }[]>`
      select distinct application_name, usename::text from pg_stat_activity
      where datname = current_database() and application_name in ${admin(SERVICE_NAMES.map((s) => `psync-${s}`))}`;
    expect(sessions.length).toBeGreaterThan(0);
    for (const s of sessions) expect(s.usename).toBe(ROLE[s.application_name.slice('psync-'.length) as ServiceName]);
    expect(await all.stop()).toBe(0);

    // Split mode: a catalog process with nothing but its own URL (DATABASE_URL empty = unset).
    const catalog = await startSystem({ role: 'catalog', env: { DATABASE_URL: '', CATALOG_DATABASE_URL: env.CATALOG_DATABASE_URL } });
    const started = firstLogEvent(catalog.logs(), 'database.opened');
    expect(started).toMatchObject({ backend: 'postgresql', service_urls: ['catalog'] });
    const [catalogSession] = await admin<{ usename: string }[]>`
      select usename::text from pg_stat_activity where datname = current_database() and application_name = 'psync-catalog'`;
    expect(catalogSession?.usename).toBe(ROLE.catalog);
    expect(await catalog.stop()).toBe(0);

    // The same URL under both names (as the chart gives a service Deployment): it migrates as itself, nothing to set up.
    const both = await startSystem({ role: 'catalog', env: { DATABASE_URL: env.CATALOG_DATABASE_URL, CATALOG_DATABASE_URL: env.CATALOG_DATABASE_URL } });
    expect(logEvents(both.logs(), 'database.role.ready')).toEqual([]);
    expect(await both.stop()).toBe(0);
  });
});
