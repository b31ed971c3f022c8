/**
 * The operator CLI bin/psync against a running system (docs/operator-cli.md): one JSON
 * object on stdout and exit 0; on failure one line on stderr, exit 2 for usage errors
 * and 1 for anything else (the system not reachable, the credential refused).
 *
 * The system runs without OPERATOR_TOKEN, so it generates its operator credential
 * under DATA_DIR/keys/operator.token: psync finds it there with nothing set, and
 * PSYNC_TOKEN (when set) wins over it. INTERNAL_AUTH_CACHE_SECONDS=1 makes a revoked
 * marketplace client's refusal quick to observe.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { create } from '@bufbuild/protobuf';
import { CatalogService, PropertySchema, PropertyStatus } from '../../gen/psync/catalog/v1/catalog_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { NotificationsService, WebhookEventType } from '../../gen/psync/notifications/v1/notifications_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { commands } from '../../bin/cli/command-set';
import { connectErrorOf } from '../support/connect-errors';
import { credentialInterceptor, TEST_TOKENS } from '../support/credentials';
import { ROOT } from '../support/process';
import { backends, freePort, linesOf, logEvents, runCommand, RunningSystem, RunResult, startSystem, stopAllSystems } from '../support/system';

const PSYNC = join(ROOT, 'bin/psync');

/** How long the system remembers a verified marketplace credential (INTERNAL_AUTH_CACHE_SECONDS). */
const CACHE_SECONDS = 1;

// Every psync call is a fresh Node process (about a second each, more on a busy machine).
jest.setTimeout(120_000);

describe(`bin/psync (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  /** The operator credential the system generated (DATA_DIR/keys/operator.token). */
  let operatorToken: string;
  const scratch = mkdtempSync(join(tmpdir(), 'psync-cli-'));

  beforeAll(async () => {
    system = await startSystem({
      timeoutMs: 110_000,
      env: { OPERATOR_TOKEN: '', INTERNAL_AUTH_CACHE_SECONDS: String(CACHE_SECONDS), EGRESS_ALLOW_CIDRS: '127.0.0.0/8' },
    });
    operatorToken = readFileSync(join(system.dataDir, 'keys', 'operator.token'), 'utf8').trim();
  }, 120_000);

  afterAll(async () => {
    await stopAllSystems();
    rmSync(scratch, { recursive: true, force: true });
  });

  interface PsyncOptions {
    internalUrl?: string;
    /** Environment overrides; undefined removes a variable. */
    env?: Record<string, string | undefined>;
    cwd?: string;
  }

  /** Runs psync with PSYNC_TOKEN set to the system's operator credential unless `opts.env` says otherwise. */
  function psync(args: string[], opts: PsyncOptions = {}): Promise<RunResult> {
    const env: Record<string, string | undefined> = {
      ...process.env,
      PSYNC_INTERNAL_URL: opts.internalUrl ?? system.internalUrl,
      PSYNC_TOKEN: operatorToken,
      DATA_DIR: undefined,
      ...opts.env,
    };
    return runCommand(PSYNC, args, env, 60000, opts.cwd ? { cwd: opts.cwd } : {});
  }

  /** A success: nothing on stderr, exactly one JSON object on stdout. */
  function jsonOf(r: RunResult): Record<string, unknown> {
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = linesOf(r.stdout);
    expect(lines).toHaveLength(1);
    return JSON.parse(lines[0]!) as Record<string, unknown>;
  }

  /** A failure: nothing on stdout, exactly one line on stderr. */
  function expectOneLineFailure(r: RunResult, code: number): string {
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code, stdout: '' });
    const lines = linesOf(r.stderr);
    expect(lines).toHaveLength(1);
    return lines[0]!;
  }

  /** A directory holding `keys/operator.token` with `content` (mode 0600), as a system's DATA_DIR does. */
  function dataDirWith(name: string, content: string | undefined): string {
    const dir = join(scratch, name);
    mkdirSync(join(dir, 'keys'), { recursive: true, mode: 0o700 });
    if (content !== undefined) writeFileSync(join(dir, 'keys', 'operator.token'), `${content}\n`, { mode: 0o600 });
    return dir;
  }

  describe('commands and usage', () => {
    test('migrate prints exactly one JSON line {"migrated":true,…} and exits 0', async () => {
      const r = await psync(['migrate']);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.endsWith('\n')).toBe(true);
      const lines = linesOf(r.stdout);
      expect(lines).toHaveLength(1);
      const out = JSON.parse(lines[0]!);
      expect(out).toMatchObject({ migrated: true });
      expect([...out.schemas].sort()).toEqual(['calendar', 'catalog', 'identity', 'notifications']);
    });

    test('migrate is idempotent: a second run succeeds and applies nothing', async () => {
      const before = system.logs().length;
      const r = await psync(['migrate']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ migrated: true });
      expect(logEvents(system.logs().slice(before), 'migration.applied')).toEqual([]);
    });

    test('no arguments: usage on stderr, exit 2', async () => {
      const line = expectOneLineFailure(await psync([]), 2);
      expect(line).toMatch(/usage/i);
      expect(line).toContain('migrate');
      expect(line).toContain('deliveries replay');
    });

    test('an unknown command: one line naming it, exit 2', async () => {
      const line = expectOneLineFailure(await psync(['frobnicate', 'everything']), 2);
      expect(line).toContain('frobnicate everything');
    });

    test('an unknown flag: one line naming it, exit 2 (the command does not run)', async () => {
      const line = expectOneLineFailure(await psync(['migrate', '--bogus', 'x']), 2);
      expect(line).toContain('--bogus');
    });

    test('a flag without a value: exit 2', async () => {
      const line = expectOneLineFailure(await psync(['migrate', '--bogus']), 2);
      expect(line).toContain('--bogus');
    });

    test('every unknown, missing and bad flag in one line, exit 2 (nothing called: no credential needed)', async () => {
      const env = { PSYNC_TOKEN: undefined, DATA_DIR: dataDirWith('all-at-once', undefined) };
      const line = expectOneLineFailure(
        await psync(['booking', 'confirm', '--guest-id', 'g', '--party-size', 'two', '--currency', 'euro', '--bogus', 'x', '--check-in'], { env }),
        2,
      );
      expect(line).toBe(
        'psync: --check-in needs a value; unknown flag --bogus; missing --listing, --check-in, --check-out, --guest-name, --amount; ' +
          '--party-size must be a whole number of guests; --currency must be a three-letter currency code such as EUR',
      );
      // With --hold the listing and nights are not needed.
      const withHold = expectOneLineFailure(await psync(['booking', 'confirm', '--hold', 'h1', '--guest-id', 'g'], { env }), 2);
      expect(withHold).toBe('psync: missing --guest-name, --party-size, --amount, --currency');
    });

    test('completion bash|zsh prints a script from the registry, exit 0, no credential', async () => {
      const env = { PSYNC_TOKEN: undefined, DATA_DIR: dataDirWith('completion', undefined) };
      const [bash, zsh, none] = await Promise.all([psync(['completion', 'bash'], { env }), psync(['completion', 'zsh'], { env }), psync(['completion'], { env })]);
      for (const r of [bash, zsh]) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(bash.stdout).toContain('complete -F _psync psync');
      expect(zsh.stdout.startsWith('#compdef psync\n')).toBe(true);
      for (const name of Object.keys(commands)) expect(bash.stdout).toContain(`'${name}')`);
      expect(expectOneLineFailure(none, 2)).toBe('psync: psync completion needs a shell: bash or zsh');
    });

    test('the system not running: one line on stderr naming the URL, exit 1, nothing on stdout', async () => {
      const closed = `http://127.0.0.1:${await freePort()}`;
      const line = expectOneLineFailure(await psync(['migrate'], { internalUrl: closed }), 1);
      expect(line).toContain(closed);
      expect(line).not.toMatch(/\bat .+:\d+:\d+/); // no stack trace
    });
  });

  describe('help', () => {
    test('psync help and psync --help list every command with a one-line description, exit 0, with no credential and no system', async () => {
      const nothing = { internalUrl: `http://127.0.0.1:${await freePort()}`, env: { PSYNC_TOKEN: undefined, DATA_DIR: dataDirWith('help-empty', undefined) } };
      const [help, dashed] = await Promise.all([psync(['help'], nothing), psync(['--help'], nothing)]);
      expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: '' });
      expect(dashed.stdout).toBe(help.stdout);
      for (const [name, cmd] of Object.entries(commands)) {
        expect(help.stdout).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
        expect(help.stdout).toContain(cmd.summary);
      }
      expect(help.stdout).toMatch(/^ {2}help +\S/m);
      expect(help.stdout).toContain('PSYNC_TOKEN');
    });

    test('--help at every level: a group, a command (also after its flags), psync help <command>', async () => {
      const [group, cmd, afterFlags, viaHelp, migrate, replay] = await Promise.all([
        psync(['key', '--help']),
        psync(['key', 'issue', '--help']),
        psync(['key', 'issue', '--workspace', 'not-checked', '--help']),
        psync(['help', 'key', 'issue']),
        psync(['migrate', '--help']),
        psync(['deliveries', 'replay', '-h']),
      ]);
      for (const r of [group, cmd, afterFlags, viaHelp, migrate, replay]) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(group.stdout).toContain('key issue');
      expect(group.stdout).toContain('key revoke');
      expect(group.stdout).not.toContain('workspace create');
      expect(linesOf(cmd.stdout)[0]).toBe('usage: psync key issue --workspace WID');
      expect(cmd.stdout).toMatch(/^ {2}--workspace WID +the workspace id/m);
      expect(afterFlags.stdout).toBe(cmd.stdout);
      expect(viaHelp.stdout).toBe(cmd.stdout);
      expect(linesOf(migrate.stdout)[0]).toBe('usage: psync migrate');
      expect(linesOf(replay.stdout)[0]).toBe('usage: psync deliveries replay --workspace WID (--event EVENT_ID | --all-abandoned)');
    });

    test('help for an unknown command is a usage error', async () => {
      const line = expectOneLineFailure(await psync(['help', 'frobnicate']), 2);
      expect(line).toContain('frobnicate');
    });
  });

  describe('the operator credential', () => {
    test('with nothing set, psync reads DATA_DIR/keys/operator.token (the file the system generated)', async () => {
      const out = jsonOf(await psync(['migrate'], { env: { PSYNC_TOKEN: undefined, DATA_DIR: system.dataDir } }));
      expect(out).toMatchObject({ migrated: true });
    });

    test('DATA_DIR defaults to ./.data in the current directory', async () => {
      const cwd = join(scratch, 'cwd');
      mkdirSync(join(cwd, '.data', 'keys'), { recursive: true, mode: 0o700 });
      copyFileSync(join(system.dataDir, 'keys', 'operator.token'), join(cwd, '.data', 'keys', 'operator.token'));
      const out = jsonOf(await psync(['migrate'], { cwd, env: { PSYNC_TOKEN: undefined } }));
      expect(out).toMatchObject({ migrated: true });
    });

    test('PSYNC_TOKEN wins over the file: a wrong one is refused although the file is right, a right one works without a file', async () => {
      const wrong = 'psop_not-the-operator-token-0123456789abcdef';
      const [refused, works] = await Promise.all([
        psync(['migrate'], { env: { PSYNC_TOKEN: wrong, DATA_DIR: system.dataDir } }),
        psync(['migrate'], { env: { DATA_DIR: dataDirWith('no-file', undefined) } }),
      ]);
      const line = expectOneLineFailure(refused, 1);
      expect(line).toContain('refused the operator credential (PSYNC_TOKEN)');
      expect(line).toContain('set PSYNC_TOKEN');
      expect(line).not.toContain(wrong);
      expect(jsonOf(works)).toMatchObject({ migrated: true });
    });

    test('no credential at all: exit 1, one line naming PSYNC_TOKEN and the file it looked for, nothing called', async () => {
      const dir = dataDirWith('none', undefined);
      const line = expectOneLineFailure(await psync(['migrate'], { env: { PSYNC_TOKEN: undefined, DATA_DIR: dir } }), 1);
      expect(line).toContain('PSYNC_TOKEN');
      expect(line).toContain(join(dir, 'keys', 'operator.token'));
    });

    test('a wrong token in the file: one line naming the file, never the token', async () => {
      const wrong = `psop_${'w'.repeat(43)}`;
      const dir = dataDirWith('wrong', wrong);
      const line = expectOneLineFailure(await psync(['workspace', 'create', '--name', 'x', '--env', 'sandbox'], { env: { PSYNC_TOKEN: undefined, DATA_DIR: dir } }), 1);
      expect(line).toContain(`refused the operator credential (the token in ${join(dir, 'keys', 'operator.token')})`);
      expect(line).not.toContain(wrong);
    });

    test("another role's credential: PERMISSION_DENIED as one line saying PSYNC_TOKEN must be the operator's", async () => {
      const line = expectOneLineFailure(await psync(['migrate'], { env: { PSYNC_TOKEN: TEST_TOKENS.marketplace } }), 1);
      expect(line).toContain('does not let this credential (PSYNC_TOKEN)');
      expect(line).toContain('psync.admin.v1.AdminService/Migrate');
      expect(line).not.toContain(TEST_TOKENS.marketplace);
    });

    test('usage errors and help need no credential', async () => {
      const env = { PSYNC_TOKEN: undefined, DATA_DIR: dataDirWith('usage', undefined) };
      const line = expectOneLineFailure(await psync(['key', 'issue', '--workspace', 'nope'], { env }), 2);
      expect(line).toContain('--workspace');
    });
  });

  /** Sends `token` as `authorization: Bearer`. */
  const bearer =
    (token: string): Interceptor =>
    (next) =>
    (req) => {
      req.header.set('authorization', `Bearer ${token}`);
      return next(req);
    };

  describe('bookings, conflicts and --output table', () => {
    /** A sandbox workspace and one of its listings, made with psync itself. */
    async function listing(): Promise<{ ws: string; listing: string }> {
      const ws = jsonOf(await psync(['workspace', 'create', '--name', 'cli bookings', '--env', 'sandbox'])).workspace_id as string;
      return { ws, listing: jsonOf(await psync(['listing', 'create', '--workspace', ws])).listing_id as string };
    }
    const night = (n: number) => new Date(Date.UTC(2031, 2, 1 + n)).toISOString().slice(0, 10);

    test('a conflict is one human line listing the taken nights; booking confirm --hold converts the hold', async () => {
      const { listing: lid } = await listing();
      const hold = jsonOf(await psync(['hold', 'place', '--listing', lid, '--check-in', night(0), '--check-out', night(2)])).hold_id as string;

      const refused = expectOneLineFailure(await psync(['hold', 'place', '--listing', lid, '--check-in', night(0), '--check-out', night(3)]), 1);
      expect(refused).toBe(`psync: conflict: nights ${night(0)}, ${night(1)} are already taken`);
      expect(refused).not.toMatch(/FailedPrecondition|FAILED_PRECONDITION/);

      const guest = ['--guest-id', 'guest-hold', '--guest-name', 'Ada', '--party-size', '2', '--amount', '250.00', '--currency', 'EUR'];
      const booked = jsonOf(await psync(['booking', 'confirm', '--hold', hold, ...guest]));
      const shown = jsonOf(await psync(['booking', 'show', '--booking', booked.booking_reference as string]));
      expect(shown).toMatchObject({ listing_id: lid, check_in: night(0), check_out: night(2), hold_id: hold, status: 'confirmed' });
      // The hold is a booking now: converting it again is refused, in words.
      const again = expectOneLineFailure(await psync(['booking', 'confirm', '--hold', hold, ...guest]), 1);
      expect(again).toMatch(/^psync: refused: the hold expired, was released or was already converted$/);
    });

    test('--idempotency-key: a retried hold place, booking confirm and booking cancel print the first answer and do nothing twice; the key with another request is refused', async () => {
      const { ws, listing: lid } = await listing();
      const key = (what: string) => `cli-${what}-${ws}`;
      const hold = ['hold', 'place', '--listing', lid, '--check-in', night(10), '--check-out', night(12), '--idempotency-key', key('hold')];
      const held = jsonOf(await psync(hold));
      expect(jsonOf(await psync(hold))).toEqual(held);
      const reused = expectOneLineFailure(await psync(['hold', 'place', '--listing', lid, '--check-in', night(20), '--check-out', night(22), '--idempotency-key', key('hold')]), 1);
      expect(reused).toBe('psync: refused: idempotency_key was already used for a different request (PlaceHold); use a new key for a new request');

      const guest = ['--guest-id', 'guest-idem', '--guest-name', 'Ada', '--party-size', '2', '--amount', '250.00', '--currency', 'EUR'];
      const confirm = ['booking', 'confirm', '--listing', lid, '--check-in', night(30), '--check-out', night(32), ...guest, '--idempotency-key', key('booking')];
      const booked = jsonOf(await psync(confirm));
      // The retry is the same booking, not a second one (which would collide with the first's nights).
      expect(jsonOf(await psync(confirm))).toEqual(booked);
      expect(jsonOf(await psync(['booking', 'show', '--booking', booked.booking_reference as string]))).toMatchObject({ check_in: night(30), status: 'confirmed' });

      const cancel = ['booking', 'cancel', '--booking', booked.booking_reference as string, '--initiated-by', 'guest', '--idempotency-key', key('cancel')];
      const cancelled = jsonOf(await psync(cancel));
      expect(cancelled).toEqual({ booking_reference: booked.booking_reference, cancelled: true });
      expect(jsonOf(await psync(cancel))).toEqual(cancelled);
      const otherCancel = expectOneLineFailure(await psync([...cancel.slice(0, 5), 'host', ...cancel.slice(6)]), 1);
      expect(otherCancel).toMatch(/^psync: refused: idempotency_key was already used for a different request \(CancelBooking\)/);

      // A key the RPCs would refuse is a usage error, before anything is called.
      expect(expectOneLineFailure(await psync([...hold.slice(0, -1), 'two words']), 2)).toBe(
        'psync: --idempotency-key must be 1 to 255 visible ASCII characters (no spaces), e.g. a UUID',
      );
    });

    test('deliveries show: an unknown delivery and bad flags fail in one line (a delivery with its attempts: test/notifications/sandbox-tools.test.ts)', async () => {
      const { ws } = await listing();
      expect(expectOneLineFailure(await psync(['deliveries', 'show', '--workspace', ws, '--event', '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f']), 1)).toBe(
        'psync: not found: no delivery with that event_id in this workspace',
      );
      expect(expectOneLineFailure(await psync(['deliveries', 'show', '--workspace', 'w', '--event', 'e']), 2)).toBe(
        'psync: --workspace must be a workspace id (a UUID, as printed by `psync workspace create`); --event must be an event_id (a UUID, as printed by `psync deliveries list`)',
      );
    });

    test('--output table: list commands print aligned columns; JSON stays the default and unchanged', async () => {
      const name = `table-client-${Date.now()}`;
      const issued = jsonOf(await psync(['client', 'issue', '--name', name]));
      const [json, table] = await Promise.all([psync(['client', 'list']), psync(['client', 'list', '--output', 'table'])]);
      const items = jsonOf(json).items as Record<string, unknown>[];
      expect(Object.keys(items[0]!)).toEqual(['client_id', 'name', 'role', 'created_at', 'revoked_at']);
      expect({ code: table.code, stderr: table.stderr }).toEqual({ code: 0, stderr: '' });
      const lines = linesOf(table.stdout);
      expect(lines[0]).toMatch(/^client_id +name +role +created_at +revoked_at$/);
      expect(lines).toHaveLength(items.length + 1);
      const row = lines.find((l) => l.startsWith(issued.client_id as string))!;
      expect(row.split(/ {2,}/)).toEqual([issued.client_id, name, 'marketplace', expect.stringMatching(/^\d{4}-/), '-']);
      // Columns line up: every row's second column starts where the header's does.
      expect(row.indexOf(name)).toBe(lines[0]!.indexOf('name'));

      const { ws } = await listing();
      const deliveries = await psync(['deliveries', 'list', '--workspace', ws, '--output=table']);
      expect({ code: deliveries.code, stdout: deliveries.stdout }).toEqual({ code: 0, stdout: 'event_id  event_type  state  attempts  last_status  next_attempt_at\n' });
      const requests = await psync(['deletion-requests', 'list', '--workspace', ws, '--output', 'table']);
      expect(linesOf(requests.stdout)).toEqual([expect.stringMatching(/^event_id +workspace_id +state +booking_references/)]);

      expect(expectOneLineFailure(await psync(['client', 'list', '--output', 'yaml']), 2)).toBe('psync: --output must be json or table');
    });
  });

  describe('marketplace clients', () => {
    /** Calls the internal API as a marketplace service holding `token`. */
    function marketplace(token: string) {
      const sessionManager = new Http2SessionManager(system.internalUrl);
      const transport = createGrpcTransport({ baseUrl: system.internalUrl, sessionManager, interceptors: [bearer(token)], defaultTimeoutMs: 15000 });
      return { catalog: createClient(CatalogService, transport), identity: createClient(IdentityService, transport), close: () => sessionManager.abort() };
    }

    test('psync client issue → the token calls marketplace RPCs (only those) → psync client revoke → UNAUTHENTICATED within the cache time', async () => {
      const issued = jsonOf(await psync(['client', 'issue', '--name', 'availability-checker']));
      const m = marketplace(issued.token as string);
      try {
        const amenities = await m.catalog.listAmenities({});
        expect(amenities.amenities.length).toBeGreaterThanOrEqual(150);
        // The allow-list: a marketplace client is not an operator.
        expect((await connectErrorOf(m.identity.listClients({}))).code).toBe(Code.PermissionDenied);

        jsonOf(await psync(['client', 'revoke', '--client', issued.client_id as string]));
        const revokedAt = Date.now();
        let refused: Code | undefined;
        while (Date.now() - revokedAt < (CACHE_SECONDS + 10) * 1000) {
          try {
            await m.catalog.listAmenities({});
          } catch (err) {
            refused = (err as { code?: Code }).code;
            break;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
        expect(refused).toBe(Code.Unauthenticated);
        expect(Date.now() - revokedAt).toBeLessThan((CACHE_SECONDS + 5) * 1000);
      } finally {
        m.close();
      }
    });

    test('a token of the right shape that was never issued is refused', async () => {
      const m = marketplace(`psmc_aaaaaaaaaaaaaaaa_${'A'.repeat(43)}`);
      try {
        expect((await connectErrorOf(m.catalog.listAmenities({}))).code).toBe(Code.Unauthenticated);
      } finally {
        m.close();
      }
    });
  });

  describe('operator reads', () => {
    /** Calls as the gateway would (what a partner's requests do) to set up records, and as the operator. */
    function asGateway() {
      const sessionManager = new Http2SessionManager(system.internalUrl);
      const transport = createGrpcTransport({ baseUrl: system.internalUrl, sessionManager, interceptors: [credentialInterceptor('gateway')], defaultTimeoutMs: 30000 });
      const op = createGrpcTransport({ baseUrl: system.internalUrl, sessionManager, interceptors: [bearer(operatorToken)], defaultTimeoutMs: 30000 });
      return {
        catalog: createClient(CatalogService, transport),
        notifications: createClient(NotificationsService, transport),
        identity: createClient(IdentityService, op),
        close: () => sessionManager.abort(),
      };
    }

    test('amenities list: the vocabulary as {"items":[{"slug","name","category"}]}', async () => {
      const out = jsonOf(await psync(['amenities', 'list']));
      expect(Object.keys(out)).toEqual(['items']);
      const items = out.items as Record<string, unknown>[];
      expect(items.length).toBeGreaterThanOrEqual(150);
      for (const i of items) expect(Object.keys(i)).toEqual(['slug', 'name', 'category']);
      expect(items.map((i) => i.slug)).toEqual(expect.arrayContaining(['wifi', 'kitchen', 'carbon_monoxide_alarm']));
    });

    test('property show and webhook show print the records; unknown ones are NOT_FOUND (exit 1, one line)', async () => {
      const g = asGateway();
      try {
        const ws = (await g.identity.createWorkspace({ name: 'cli reads', environment: Environment.SANDBOX })).workspace!.workspaceId;
        await g.catalog.upsertProperty({
          workspaceId: ws,
          providerId: 'prop-1',
          property: create(PropertySchema, {
            name: 'Harbour loft',
            propertyType: 'apartment',
            address: { line1: '1 Quai des Arts', city: 'Marseille', country: 'FR', latitude: 43.2965, longitude: 5.3698 },
            occupancy: { maxGuests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
            amenities: ['wifi', 'not_an_amenity'],
            checkInTime: '15:00',
            checkOutTime: '11:00',
            status: PropertyStatus.LISTED,
          }),
        });
        const property = jsonOf(await psync(['property', 'show', '--workspace', ws, '--provider-id', 'prop-1']));
        expect(property).toMatchObject({
          provider_id: 'prop-1',
          property: { name: 'Harbour loft', description: null, base_rate: null, status: 'listed', address: { city: 'Marseille', region: null } },
          publishable: false,
          unknown_amenities: ['not_an_amenity'],
        });
        expect(property.missing).toEqual(expect.arrayContaining(['price', 'photos']));

        // Registered whatever its challenge's outcome (nothing need listen there): the record is what is shown.
        await g.notifications.putEndpoint({ workspaceId: ws, url: 'https://localhost:8443/hooks', events: [WebhookEventType.BOOKING_CONFIRMED] });
        const endpoint = jsonOf(await psync(['webhook', 'show', '--workspace', ws]));
        expect(Object.keys(endpoint)).toEqual(['workspace_id', 'url', 'events', 'status', 'previous_valid_until', 'created_at', 'updated_at']);
        expect(endpoint).toMatchObject({ workspace_id: ws, url: 'https://localhost:8443/hooks', events: ['booking.confirmed'], previous_valid_until: null });
        expect(['pending_verification', 'active', 'suspended']).toContain(endpoint.status);

        const other = (await g.identity.createWorkspace({ name: 'cli reads empty', environment: Environment.SANDBOX })).workspace!.workspaceId;
        for (const args of [
          ['property', 'show', '--workspace', ws, '--provider-id', 'nope'],
          ['webhook', 'show', '--workspace', other],
        ]) {
          expect(expectOneLineFailure(await psync(args), 1)).toMatch(/not ?found/i);
        }
      } finally {
        g.close();
      }
    });
  });
});
