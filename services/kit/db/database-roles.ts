/**
 * Least-privilege database roles: one PostgreSQL role per service, owning its schema
 * and everything in it, with no privilege on any other service's schema
 * (docs/operations.md "Database roles", docs/decisions.md "One database role per service").
 *
 * `provisionServiceRoles` runs as the administrator (DATABASE_URL) before the
 * migrations, for every service that has its own `<SERVICE>_DATABASE_URL`:
 *
 * - the login role named in that URL exists, NOSUPERUSER NOCREATEDB NOCREATEROLE
 *   NOINHERIT, with the URL's password (set again when it differs: a rotation);
 * - it may connect to the database;
 * - the schema `<service>` exists and the role owns it and every table, sequence,
 *   view, routine and type in it: an installation migrated earlier by the
 *   administrator is taken over;
 * - PUBLIC has nothing on the schema, and the role has nothing on the other services'
 *   schemas (no grants, no membership in a role owning one);
 * - the database-wide extensions the migrations create exist, created here since a
 *   service role may not create them.
 *
 * The migrations then run as each service role (its own URL), so what they create is
 * owned by it. Everything happens in one transaction under the migration lock
 * (migrate.ts), so replicas starting together serialize and a failure changes nothing.
 *
 * Role names are validated to a plain shape and passed as identifiers; the password
 * is sent only as a SCRAM-SHA-256 verifier computed here (as `psql`'s `\password`
 * does), so it never appears in the statement text or the server's log.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { SERVICE_NAMES, type Sql, type Tx } from './database';
import { logEvent, type Logger } from '../base';
import { takeMigrationLock } from './migrate';
import { parsePostgresUrl } from './postgres-url';
import type { ServiceName } from '../base';

/** A service with its own database URL. */
export interface ServiceRoleUrl {
  service: ServiceName;
  url: string;
}

/** What provisioning found or did for one service. */
export interface ServiceRoleResult {
  service: ServiceName;
  role: string;
  created: boolean;
  passwordChanged: boolean;
  /** Objects of the schema (the schema included) whose owner was changed to the role. */
  ownershipMoved: number;
}

/** Role names are interpolated as identifiers, so they are kept to a plain shape (≤ 63 bytes, PostgreSQL's limit). */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Extensions the migrations create `with schema public` (the calendar's exclusion
 * constraint needs btree_gist): database-wide objects only the administrator may
 * create, so they are created here, before any service role's migration checks them.
 */
export const DATABASE_EXTENSIONS = ['btree_gist'] as const;

const SCRAM_ITERATIONS = 4096;

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677). The
 * password's UTF-8 bytes are used as they are, as postgres.js does when it logs in
 * (libpq would normalize non-ASCII passwords with SASLprep first: ASCII passwords
 * behave the same with both).
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = SCRAM_ITERATIONS): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** True when `verifier` (as stored in pg_authid) is the SCRAM-SHA-256 verifier of `password`. */
export function verifierMatches(verifier: string | null, password: string): boolean {
  const m = verifier && /^SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)$/.exec(verifier);
  if (!m) return false;
  const expected = Buffer.from(scramVerifier(password, Buffer.from(m[2]!, 'base64'), Number(m[1])));
  const actual = Buffer.from(verifier);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** The role, password and database a per-service URL names; throws a one-line error for an unusable one. */
export function parseServiceRoleUrl(service: ServiceName, url: string): { role: string; password?: string; database: string } {
  const setting = `${service.toUpperCase()}_DATABASE_URL`;
  const u = parsePostgresUrl(url);
  const role = u.username;
  if (!ROLE_NAME.test(role)) {
    throw new Error(`${setting} must name its own role as the user, matching ${ROLE_NAME} (got ${JSON.stringify(role)})`);
  }
  const password = u.password || undefined;
  // postgres.js connects to the database named by the path, else to the one named like the user.
  const database = u.database || role;
  return { role, ...(password !== undefined ? { password } : {}), database };
}

interface Facts {
  admin: string;
  database: string;
  superuser: boolean;
}

/**
 * Creates or checks the role of every service in `services` (see the file comment),
 * connected as the administrator. Idempotent; safe to run on every start-up.
 */
export async function provisionServiceRoles(admin: Sql, services: ServiceRoleUrl[], log?: Logger): Promise<ServiceRoleResult[]> {
  const wanted = services.map((s) => ({ service: s.service, ...parseServiceRoleUrl(s.service, s.url) }));
  const byRole = new Map<string, ServiceName>();
  for (const w of wanted) {
    const other = byRole.get(w.role);
    if (other) throw new Error(`${other.toUpperCase()}_DATABASE_URL and ${w.service.toUpperCase()}_DATABASE_URL name the same role ${w.role}: each service needs its own`);
    byRole.set(w.role, w.service);
  }

  const results = await admin.begin(async (tx: Tx) => {
    await takeMigrationLock(tx);
    // Catalog names printed below (regclass, regprocedure, regtype) are then always schema-qualified.
    await tx`set local search_path to pg_catalog`;
    const [facts] = await tx<Facts[]>`
      select current_user as admin, current_database() as database,
             (select rolsuper from pg_roles where rolname = current_user) as superuser`;
    const { admin: adminRole, database, superuser } = facts!;
    for (const w of wanted) {
      if (w.database !== database) {
        throw new Error(`${w.service.toUpperCase()}_DATABASE_URL names the database ${w.database}, DATABASE_URL the database ${database}: they must be the same`);
      }
      if (w.role === adminRole) {
        throw new Error(`${w.service.toUpperCase()}_DATABASE_URL names the administrator ${adminRole} (DATABASE_URL's user): give the service a role of its own`);
      }
    }
    for (const ext of DATABASE_EXTENSIONS) await tx`create extension if not exists ${tx(ext)} with schema public`;

    const out: ServiceRoleResult[] = [];
    for (const w of wanted) {
      const { created, passwordChanged } = await ensureRole(tx, w, superuser);
      await tx`grant connect on database ${tx(database)} to ${tx(w.role)}`;
      const ownershipMoved = await ensureSchemaOwned(tx, w.service, w.role, database, superuser);
      out.push({ service: w.service, role: w.role, created, passwordChanged, ownershipMoved });
    }
    for (const w of wanted) await isolate(tx, w.service, w.role);
    return out;
  });
  for (const r of results) log?.info({ event: logEvent('database.role.ready'), ...r }, 'database role ready');
  return [...results];
}

/** Creates the role, or brings an existing one to the wanted attributes and password. */
async function ensureRole(tx: Tx, w: { service: ServiceName; role: string; password?: string }, superuser: boolean): Promise<{ created: boolean; passwordChanged: boolean }> {
  const [existing] = await tx<{ rolsuper: boolean; rolreplication: boolean; rolbypassrls: boolean }[]>`
    select rolsuper, rolreplication, rolbypassrls from pg_roles where rolname = ${w.role}`;
  const password = w.password !== undefined ? ` password '${checkedVerifier(scramVerifier(w.password))}'` : '';
  if (!existing) {
    await tx.unsafe(`create role "${w.role}" login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls${password}`);
  } else {
    const setting = `${w.service.toUpperCase()}_DATABASE_URL`;
    // Demoting a superuser named by mistake could lock the operator out: refuse instead.
    if (existing.rolsuper) throw new Error(`${setting} names ${w.role}, a superuser: a service role must not be one`);
    if (superuser) {
      await tx`alter role ${tx(w.role)} login nosuperuser nocreatedb nocreaterole noinherit noreplication nobypassrls`;
    } else {
      // Only a superuser may change these two attributes.
      if (existing.rolreplication || existing.rolbypassrls) throw new Error(`${setting} names ${w.role}, which has REPLICATION or BYPASSRLS: a superuser must remove them`);
      await tx`alter role ${tx(w.role)} login nocreatedb nocreaterole noinherit`;
    }
  }
  let passwordChanged = false;
  if (existing && w.password !== undefined) {
    // pg_authid is readable by superusers only; otherwise the password is set every time.
    const [stored] = superuser ? await tx<{ v: string | null }[]>`select rolpassword as v from pg_authid where rolname = ${w.role}` : [];
    if (!stored || !verifierMatches(stored.v, w.password)) {
      await tx.unsafe(`alter role "${w.role}"${password}`);
      passwordChanged = true;
    }
  }
  // A non-superuser administrator (CREATEROLE) must be a member of a role to create or move objects owned by it.
  if (!superuser) await tx`grant ${tx(w.role)} to current_user`;
  return { created: !existing, passwordChanged: passwordChanged || (!existing && w.password !== undefined) };
}

/** A verifier is interpolated as a literal: make sure it holds no quote (it never does). */
function checkedVerifier(v: string): string {
  if (!/^[A-Za-z0-9+/=$:-]+$/.test(v)) throw new Error('unexpected SCRAM verifier shape');
  return v;
}

/** Creates the schema owned by `role`, or moves the schema and every object in it to `role`; returns how many owners changed. */
async function ensureSchemaOwned(tx: Tx, schema: ServiceName, role: string, database: string, superuser: boolean): Promise<number> {
  const [nsp] = await tx<{ owner: string }[]>`select nspowner::regrole::text as owner from pg_namespace where nspname = ${schema}`;
  let moved = 0;
  if (!nsp) {
    await tx`create schema ${tx(schema)} authorization ${tx(role)}`;
  } else if (nsp.owner !== role) {
    // A schema's new owner needs CREATE on the database unless a superuser moves it.
    if (!superuser) await tx`grant create on database ${tx(database)} to ${tx(role)}`;
    await tx`alter schema ${tx(schema)} owner to ${tx(role)}`;
    if (!superuser) await tx`revoke create on database ${tx(database)} from ${tx(role)}`;
    moved++;
  }
  await tx`revoke all on schema ${tx(schema)} from public`;

  // Tables first: moving one moves its indexes, its row type and the sequences its columns own.
  const relations = await tx<{ name: string; relkind: string }[]>`
    select c.oid::regclass::text as name, c.relkind from pg_class c
    where c.relnamespace = ${schema}::regnamespace and c.relkind in ('r', 'p', 'f', 'v', 'm')
      and c.relowner <> ${role}::regrole`;
  const relationKeyword: Record<string, string> = { r: 'table', p: 'table', f: 'foreign table', v: 'view', m: 'materialized view' };
  for (const r of relations) {
    await tx.unsafe(`alter ${relationKeyword[r.relkind]} ${r.name} owner to "${role}"`);
    moved++;
  }
  const sequences = await tx<{ name: string }[]>`
    select c.oid::regclass::text as name from pg_class c
    where c.relnamespace = ${schema}::regnamespace and c.relkind = 'S' and c.relowner <> ${role}::regrole`;
  for (const s of sequences) {
    await tx.unsafe(`alter sequence ${s.name} owner to "${role}"`);
    moved++;
  }
  // Stand-alone types: composite (relkind 'c'), domains, enums, ranges; arrays and multiranges follow their type.
  const types = await tx<{ name: string; typtype: string }[]>`
    select t.oid::regtype::text as name, t.typtype from pg_type t
    where t.typnamespace = ${schema}::regnamespace and t.typowner <> ${role}::regrole
      and (t.typtype in ('d', 'e', 'r')
           or (t.typtype = 'c' and exists (select 1 from pg_class c where c.oid = t.typrelid and c.relkind = 'c')))`;
  for (const t of types) {
    await tx.unsafe(`alter ${t.typtype === 'd' ? 'domain' : 'type'} ${t.name} owner to "${role}"`);
    moved++;
  }
  const routines = await tx<{ name: string; prokind: string }[]>`
    select p.oid::regprocedure::text as name, p.prokind from pg_proc p
    where p.pronamespace = ${schema}::regnamespace and p.proowner <> ${role}::regrole`;
  const routineKeyword: Record<string, string> = { f: 'function', w: 'function', p: 'procedure', a: 'aggregate' };
  for (const r of routines) {
    await tx.unsafe(`alter ${routineKeyword[r.prokind]} ${r.name} owner to "${role}"`);
    moved++;
  }
  return moved;
}

/** Removes whatever `role` holds on the other services' schemas: grants, and membership in a role that owns one. */
async function isolate(tx: Tx, own: ServiceName, role: string): Promise<void> {
  const others = await tx<{ schema: string; owner: string }[]>`
    select nspname as schema, nspowner::regrole::text as owner from pg_namespace
    where nspname in ${tx(SERVICE_NAMES.filter((s) => s !== own))}`;
  for (const { schema } of others) {
    // Only where the role holds a grant: a REVOKE on an object with default privileges
    // would write them out explicitly, and a second run would not be a no-op.
    const [granted] = await tx`
      select 1 from pg_namespace n
      where n.nspname = ${schema}
        and (exists (select 1 from aclexplode(n.nspacl) a where a.grantee = ${role}::regrole)
          or exists (select 1 from pg_class c, aclexplode(c.relacl) a where c.relnamespace = n.oid and a.grantee = ${role}::regrole)
          or exists (select 1 from pg_proc p, aclexplode(p.proacl) a where p.pronamespace = n.oid and a.grantee = ${role}::regrole))`;
    if (!granted) continue;
    await tx`revoke all on schema ${tx(schema)} from ${tx(role)}`;
    await tx`revoke all on all tables in schema ${tx(schema)} from ${tx(role)}`;
    await tx`revoke all on all sequences in schema ${tx(schema)} from ${tx(role)}`;
    await tx`revoke all on all routines in schema ${tx(schema)} from ${tx(role)}`;
  }
  const owners = others.map((o) => o.owner);
  if (owners.length === 0) return;
  const memberships = await tx<{ name: string }[]>`
    select m.roleid::regrole::text as name from pg_auth_members m
    where m.member = ${role}::regrole and m.roleid::regrole::text in ${tx(owners)}`;
  for (const m of memberships) await tx.unsafe(`revoke ${m.name} from "${role}"`);
}
