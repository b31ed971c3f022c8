/**
 * PostgreSQL URLs with one host or a host list, read as postgres.js reads them, and the
 * places that read DATABASE_URL: configuration, log lines without secrets, the roles'
 * URLs.
 */
import postgres from 'postgres';
import { loadConfig } from '../runtime';
import { ConfigError } from '../base';
import { parseServiceRoleUrl } from './database-roles';
import { hostList, parsePostgresUrl, postgresUrlWithoutSecrets } from './postgres-url';
import { urlWithoutSecrets } from '../runtime';

const MULTI = 'postgres://psync:s%40cret@db-1.internal:5432,db-2.internal:5433,db-3.internal/psync?target_session_attrs=read-write&sslmode=verify-full';

describe('parsePostgresUrl', () => {
  test('a host list: every host in order, the rest as for one host', () => {
    const u = parsePostgresUrl(MULTI);
    expect(u).toMatchObject({ scheme: 'postgres', username: 'psync', password: 's@cret', database: 'psync' });
    expect(u.hosts).toEqual([
      { host: 'db-1.internal', port: '5432' },
      { host: 'db-2.internal', port: '5433' },
      { host: 'db-3.internal', port: '' },
    ]);
    expect(u.searchParams.get('target_session_attrs')).toBe('read-write');
    expect(hostList(u)).toBe('db-1.internal:5432,db-2.internal:5433,db-3.internal');
  });

  test('the same hosts, user, database and target_session_attrs as postgres.js takes', async () => {
    const sql = postgres(MULTI);
    const u = parsePostgresUrl(MULTI);
    expect(sql.options.host).toEqual(u.hosts.map((h) => h.host));
    expect(sql.options.port).toEqual(u.hosts.map((h) => Number(h.port || 5432)));
    expect(sql.options).toMatchObject({ user: u.username, database: u.database, target_session_attrs: 'read-write' });
    await sql.end();
  });

  test('one host, no user, no database, postgresql scheme', () => {
    expect(parsePostgresUrl('postgresql://db.example')).toMatchObject({
      scheme: 'postgresql',
      username: '',
      password: '',
      database: '',
      hosts: [{ host: 'db.example', port: '' }],
    });
  });

  test.each([
    ['not a URL', 'db.example:5432'],
    ['an empty host in the list', 'postgres://u@h1:5432,/db'],
    ['a bad port in the list', 'postgres://u@h1:5432,h2:port/db'],
    ['an unknown target_session_attrs', 'postgres://u@h1,h2/db?target_session_attrs=any-writer'],
  ])('refuses %s', (_what, raw) => {
    expect(() => parsePostgresUrl(raw)).toThrow();
  });

  test('without secrets: no password, no query, every host', () => {
    expect(postgresUrlWithoutSecrets(MULTI)).toBe('postgres://psync@db-1.internal:5432,db-2.internal:5433,db-3.internal/psync');
    expect(urlWithoutSecrets(MULTI)).toBe('postgres://psync@db-1.internal:5432,db-2.internal:5433,db-3.internal/psync');
    expect(urlWithoutSecrets('postgres://u:p@db:5432/psync?password=x')).toBe('postgres://u@db:5432/psync');
  });
});

describe('DATABASE_URL and the per-service URLs accept a host list', () => {
  test('loadConfig keeps it as given', () => {
    expect(loadConfig({ DATABASE_URL: MULTI, CALENDAR_DATABASE_URL: MULTI.replace('psync:', 'psync_calendar:') })).toMatchObject({
      databaseUrl: MULTI,
      calendarDatabaseUrl: MULTI.replace('psync:', 'psync_calendar:'),
    });
  });

  test('loadConfig refuses an unknown target_session_attrs with one line naming the variable', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@h1,h2/db?target_session_attrs=writer' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@h1,h2/db?target_session_attrs=writer' })).toThrow(/^DATABASE_URL .*target_session_attrs[^\n]*$/);
  });

  test("a service role's URL: role, password and database from a host list", () => {
    expect(parseServiceRoleUrl('calendar', 'postgres://psync_calendar:pw@h1:5432,h2:5432/psync?target_session_attrs=read-write')).toEqual({
      role: 'psync_calendar',
      password: 'pw',
      database: 'psync',
    });
  });
});
