/**
 * The allow-list (services/kit/rpc/access-policy.ts) against the code and the docs: every
 * RPC of every service the processes host has an entry, no entry names an RPC that does
 * not exist, and docs/security/internal-access.md publishes exactly this table.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { ServerReflection as ReflectionV1 } from '../../gen/grpc/reflection/v1/reflection_pb';
import { ServerReflection as ReflectionV1Alpha } from '../../gen/grpc/reflection/v1alpha/reflection_pb';
import { AdminService } from '../../gen/psync/admin/v1/admin_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { NotificationsService } from '../../gen/psync/notifications/v1/notifications_pb';
import { ACCESS_POLICY, isAllowed, ROLES, UNAUTHENTICATED_SERVICES } from '../../services/kit/rpc';
import { ROOT } from '../support/process';

const SERVICES: DescService[] = [ReflectionV1, ReflectionV1Alpha, AdminService, IdentityService, CatalogService, CalendarService, NotificationsService];

test('every RPC of every hosted service has an entry, and every entry is an RPC', () => {
  const fromProto = SERVICES.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)).sort();
  const fromPolicy = Object.entries(ACCESS_POLICY)
    .flatMap(([svc, methods]) => Object.keys(methods).map((m) => `${svc}/${m}`))
    .sort();
  expect(fromPolicy).toEqual(fromProto);
});

test('every entry names known roles and at least one', () => {
  for (const methods of Object.values(ACCESS_POLICY)) {
    for (const roles of Object.values(methods)) {
      expect(roles.length).toBeGreaterThan(0);
      for (const r of roles) expect(ROLES).toContain(r);
    }
  }
});

test('gRPC server reflection: every role, but never without a credential', () => {
  for (const svc of [ReflectionV1, ReflectionV1Alpha]) {
    for (const r of ROLES) expect(isAllowed(r, svc.typeName, 'ServerReflectionInfo')).toBe(true);
    expect(UNAUTHENTICATED_SERVICES.has(svc.typeName)).toBe(false);
  }
});

test('default deny: an unknown service or method is allowed to no one', () => {
  for (const r of ROLES) {
    expect(isAllowed(r, 'psync.identity.v1.IdentityService', 'DropEverything')).toBe(false);
    expect(isAllowed(r, 'psync.secret.v1.SecretService', 'Get')).toBe(false);
  }
});

test('docs/security/internal-access.md publishes exactly this table', () => {
  const doc = readFileSync(join(ROOT, 'docs/security/internal-access.md'), 'utf8');
  const table = doc.slice(doc.indexOf('<!-- access-policy:begin'), doc.indexOf('<!-- access-policy:end'));
  const lines = table.split('\n').filter((l) => l.startsWith('| `'));
  const header = table.split('\n').find((l) => l.startsWith('| RPC |'))!;
  const roles = header
    .split('|')
    .slice(2, -1)
    .map((c) => c.trim());
  expect(roles).toEqual([...ROLES]);
  const published: Record<string, string[]> = {};
  for (const l of lines) {
    const cells = l
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const name = cells[0]!.replace(/`/g, '');
    // Our own services are written without their `psync.` prefix; gRPC's standard ones in full.
    const rpc = name.startsWith('grpc.') ? name : `psync.${name}`;
    published[rpc] = roles.filter((_, i) => cells[i + 1] === '✓');
  }
  const code: Record<string, string[]> = {};
  for (const [svc, methods] of Object.entries(ACCESS_POLICY)) {
    for (const [m, allowed] of Object.entries(methods)) code[`${svc}/${m}`] = ROLES.filter((r) => allowed.includes(r));
  }
  expect(published).toEqual(code);
});
