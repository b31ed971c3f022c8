/**
 * A private nats-server for one test file, with JetStream and an authorization block:
 * one user per role with the publish/subscribe permissions docs/operations.md ("NATS
 * authentication") documents, so a test can show what the server refuses. Started on a
 * free loopback port with its own store directory; never the machine's shared server.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inboxPrefixOf } from '../../services/kit/events';
import { INTAKE_CONSUMER } from '../../services/notifications/intake';
import { spawnNatsServer } from './plain-nats';

/** NATS users of the test server: the roles of docs/operations.md. */
export type NatsRole = 'calendar' | 'notifications' | 'identity' | 'catalog' | 'psync';

export interface Permissions {
  publish: string[];
  subscribe: string[];
}

/**
 * The permissions of each role on a bus with subject prefix `prefix` (docs/operations.md
 * prints the same block for prefix `psync`). `psync` is the all-in-one: both services.
 */
export function natsPermissions(prefix: string, mayUpdateStream?: readonly NatsRole[]): Record<NatsRole, Permissions> {
  const stream = prefix.toUpperCase().replace(/-/g, '_');
  // Every process ensures the stream exists and pings the account.
  const base = ['$JS.API.INFO', `$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`, `$JS.API.STREAM.UPDATE.${stream}`];
  return withoutStreamUpdate(stream, mayUpdateStream, rolePermissions(prefix, stream, base));
}

/** `perms` with `$JS.API.STREAM.UPDATE.<stream>` left only to the roles in `mayUpdateStream` (all when undefined). */
function withoutStreamUpdate(stream: string, mayUpdateStream: readonly NatsRole[] | undefined, perms: Record<NatsRole, Permissions>): Record<NatsRole, Permissions> {
  if (!mayUpdateStream) return perms;
  const update = `$JS.API.STREAM.UPDATE.${stream}`;
  for (const role of Object.keys(perms) as NatsRole[]) {
    if (!mayUpdateStream.includes(role)) perms[role] = { ...perms[role], publish: perms[role].publish.filter((s) => s !== update) };
  }
  return perms;
}

/** Each role's permissions, every one of them starting with `base`. */
function rolePermissions(prefix: string, stream: string, base: string[]): Record<NatsRole, Permissions> {
  const consumer = INTAKE_CONSUMER;
  const calendar: Permissions = {
    publish: [...base, `${prefix}.psync.calendar.v1.>`],
    subscribe: [`${inboxPrefixOf('calendar')}.>`],
  };
  const notifications: Permissions = {
    publish: [
      ...base,
      `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
      `$JS.API.CONSUMER.CREATE.${stream}.${consumer}`,
      `$JS.API.CONSUMER.CREATE.${stream}.${consumer}.>`,
      `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${consumer}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
      `$JS.ACK.${stream}.${consumer}.>`,
    ],
    subscribe: [`${inboxPrefixOf('notifications')}.>`],
  };
  const catalog: Permissions = {
    publish: [...base, `${prefix}.catalog.>`],
    subscribe: [`${inboxPrefixOf('catalog')}.>`],
  };
  return {
    calendar,
    notifications,
    identity: { publish: base, subscribe: [`${inboxPrefixOf('identity')}.>`] },
    catalog,
    psync: {
      publish: [...new Set([...calendar.publish, ...notifications.publish, ...catalog.publish])],
      subscribe: [`${inboxPrefixOf('psync')}.>`],
    },
  };
}

/**
 * The server's authorization block for `users` (role → password) and `nkeyUsers` (role →
 * public user nkey, for `.creds` files), in nats-server config syntax (JSON strings are
 * valid there).
 */
export function authorizationBlock(
  prefix: string,
  users: Partial<Record<NatsRole, string>>,
  nkeyUsers: Partial<Record<NatsRole, string>> = {},
  mayUpdateStream?: readonly NatsRole[],
  /** Password of a user `admin` allowed everything (an operator's `nats` CLI); none when undefined. */
  adminPassword?: string,
): string {
  const perms = natsPermissions(prefix, mayUpdateStream);
  const permissions = (role: NatsRole) =>
    `permissions: { publish: { allow: ${JSON.stringify(perms[role].publish)} }, subscribe: { allow: ${JSON.stringify(perms[role].subscribe)} } }`;
  const lines = [
    ...(Object.keys(users) as NatsRole[]).map((role) => `    { user: ${JSON.stringify(role)}, password: ${JSON.stringify(users[role])}, ${permissions(role)} }`),
    ...(Object.keys(nkeyUsers) as NatsRole[]).map((role) => `    { nkey: ${JSON.stringify(nkeyUsers[role])}, ${permissions(role)} }`),
    ...(adminPassword === undefined ? [] : [`    { user: "admin", password: ${JSON.stringify(adminPassword)} }`]),
  ];
  return `authorization {\n  users: [\n${lines.join('\n')}\n  ]\n}\n`;
}

/** Whether the `nats-server` binary is installed (tests that start their own servers skip without it). */
export function hasNatsServer(): boolean {
  try {
    execFileSync('nats-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface PrivateNats {
  port: number;
  /** nats://127.0.0.1:port, no credentials. */
  url: string;
  /** The URL with `role`'s user and password. */
  urlFor(role: NatsRole): string;
  /** The URL of user `admin`, allowed everything (deleting a consumer, as an operator's `nats` CLI would). */
  adminUrl: string;
  stop(): Promise<void>;
}

/**
 * Starts `nats-server -a 127.0.0.1 -p <free> -js -sd <tmp> -c <conf>` with one user and
 * password per role, and the nkey users `nkeyUsers` (role → public key).
 */
export async function startPrivateNats(
  prefix: string,
  nkeyUsers: Partial<Record<NatsRole, string>> = {},
  opts: { /** Roles that may update the stream (helm/psync/README.md: only calendar); default all. */ mayUpdateStream?: readonly NatsRole[] } = {},
): Promise<PrivateNats> {
  const dir = mkdtempSync(join(tmpdir(), 'psync-nats-'));
  const users = Object.fromEntries((['calendar', 'notifications', 'identity', 'catalog', 'psync'] as const).map((r) => [r, randomBytes(12).toString('hex')])) as Record<
    NatsRole,
    string
  >;
  const conf = join(dir, 'nats.conf');
  const adminPassword = randomBytes(12).toString('hex');
  writeFileSync(conf, authorizationBlock(prefix, users, nkeyUsers, opts.mayUpdateStream, adminPassword));
  const { port, url, stop } = await spawnNatsServer(dir, ['-c', conf], { user: 'psync', pass: users.psync });
  const urlFor = (role: NatsRole) => `nats://${role}:${users[role]}@127.0.0.1:${port}`;
  return { port, url, urlFor, adminUrl: `nats://admin:${adminPassword}@127.0.0.1:${port}`, stop };
}
