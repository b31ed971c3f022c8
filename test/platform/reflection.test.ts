/**
 * gRPC server reflection (services/kit/rpc/reflection.ts; docs/marketplace.md
 * "Reflection"), as a marketplace engineer meets it: `buf curl` from a directory with
 * no `.proto` files lists the marketplace's RPCs and calls one, over both protocol
 * names (v1, and v1alpha that older tools ask for), and shows a refusal's error
 * details; without a credential reflection is refused; and the index behind it answers
 * every kind of question the protocol has.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create, fromBinary, type MessageInitShape } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Interceptor } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { ServerReflection, ServerReflectionRequestSchema, type ServerReflectionResponse } from '../../gen/grpc/reflection/v1/reflection_pb';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { ConflictDetailSchema, ErrorDetailSchema, ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { ACCESS_POLICY } from '../../services/kit/rpc';
import { answer, ReflectionIndex } from '../../services/kit/rpc';
import { TEST_TOKENS, credentialInterceptor } from '../support/credentials';
import { createWorkspace, type InternalClients } from '../support/internal-clients';
import { ROOT } from '../support/process';
import { backends, type RunningSystem, useSystem } from '../support/system';

jest.setTimeout(120_000);

const BUF = join(ROOT, 'node_modules/.bin/buf');

/** The RPCs the marketplace role may call, as `service/method`, from the allow-list. */
const MARKETPLACE_RPCS = Object.entries(ACCESS_POLICY)
  .flatMap(([svc, methods]) =>
    Object.entries(methods)
      .filter(([, roles]) => roles.includes('marketplace'))
      .map(([m]) => `${svc}/${m}`),
  )
  .filter((rpc) => rpc.startsWith('psync.'))
  .sort();

interface CurlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `buf curl …` in an empty temporary directory: no proto/, no buf.yaml to find. */
function bufCurl(args: string[]): Promise<CurlResult> {
  const cwd = mkdtempSync(join(tmpdir(), 'psync-buf-curl-'));
  return new Promise((resolve) => {
    execFile(BUF, ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      rmSync(cwd, { recursive: true, force: true });
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const auth = (role: 'marketplace' | 'operator' = 'marketplace') => `authorization: Bearer ${TEST_TOKENS[role]}`;

describe(`server reflection against a running system (database: ${backends.database}, bus: ${backends.bus})`, () => {
  let system: RunningSystem;
  let c: InternalClients;
  let listingId: string;

  const inUse = useSystem();

  beforeAll(async () => {
    ({ system, clients: c } = inUse);
    const ws = await createWorkspace(c.identity, 'sandbox', 'reflection test');
    listingId = (await c.catalog.createListing({ workspaceId: ws })).listing!.listingId;
  });

  test('buf curl lists every marketplace RPC with no .proto files (reflection v1)', async () => {
    const res = await bufCurl(['--reflect-header', auth(), '--list-methods', system.internalUrl]);
    expect(res).toMatchObject({ code: 0 });
    const listed = res.stdout.split('\n').filter(Boolean);
    for (const rpc of MARKETPLACE_RPCS) expect(listed).toContain(rpc);
    expect(listed).toContain('grpc.reflection.v1.ServerReflection/ServerReflectionInfo');
  });

  test('the older grpc.reflection.v1alpha name answers the same', async () => {
    const res = await bufCurl(['--reflect-protocol', 'grpc-v1alpha', '--reflect-header', auth(), '--list-services', system.internalUrl]);
    expect(res).toMatchObject({ code: 0 });
    const listed = res.stdout.split('\n').filter(Boolean);
    expect(listed).toEqual(expect.arrayContaining(['psync.calendar.v1.CalendarService', 'psync.catalog.v1.CatalogService', 'grpc.health.v1.Health']));
  });

  test('buf curl calls GetAvailability as the marketplace, schema from reflection only', async () => {
    const res = await bufCurl([
      '--reflect-header',
      auth(),
      '-H',
      auth(),
      '-d',
      JSON.stringify({ listing_id: listingId, check_in: '2031-03-01', check_out: '2031-03-03' }),
      `${system.internalUrl}/psync.calendar.v1.CalendarService/GetAvailability`,
    ]);
    expect(res).toMatchObject({ code: 0 });
    const body = JSON.parse(res.stdout) as { listingId: string; nights: { date: string; available: boolean }[] };
    expect(body.listingId).toBe(listingId);
    expect(body.nights).toEqual([
      { date: '2031-03-01', available: true },
      { date: '2031-03-02', available: true },
    ]);
  });

  test('buf curl PlaceHold twice with one idempotency_key → the same hold', async () => {
    const place = () =>
      bufCurl([
        '--reflect-header',
        auth(),
        '-H',
        auth(),
        '-d',
        JSON.stringify({ listing_id: listingId, check_in: '2031-05-01', check_out: '2031-05-02', idempotency_key: 'reflection-retry-1' }),
        `${system.internalUrl}/psync.calendar.v1.CalendarService/PlaceHold`,
      ]);
    const first = await place();
    expect(first).toMatchObject({ code: 0 });
    const second = await place();
    expect(second).toMatchObject({ code: 0 });
    const a = JSON.parse(first.stdout) as { hold: { holdId: string } };
    expect(a.hold.holdId).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(second.stdout)).toEqual(a);
  });

  test('a refused call through buf curl carries its ErrorDetail and ConflictDetail', async () => {
    await c.calendar.placeHold({ listingId, checkIn: '2031-04-01', checkOut: '2031-04-03' });
    const res = await bufCurl([
      '--reflect-header',
      auth(),
      '-H',
      auth(),
      '-d',
      JSON.stringify({ listing_id: listingId, check_in: '2031-04-02', check_out: '2031-04-04', idempotency_key: 'reflection-conflict-1' }),
      `${system.internalUrl}/psync.calendar.v1.CalendarService/PlaceHold`,
    ]);
    // buf curl exits with the gRPC code << 3 and prints the status; FAILED_PRECONDITION is 9.
    expect(res.code).toBe(9 << 3);
    const status = JSON.parse(res.stderr) as { code: string; message: string; details: { type: string; value: string }[] };
    expect(status).toMatchObject({ code: 'failed_precondition', message: '1 night(s) already taken' });
    expect(status.details.map((d) => d.type)).toEqual(['psync.common.v1.ErrorDetail', 'psync.common.v1.ConflictDetail']);
    expect(fromBinary(ErrorDetailSchema, Buffer.from(status.details[0]!.value, 'base64')).reason).toBe(ErrorReason.CONFLICT);
    expect(fromBinary(ConflictDetailSchema, Buffer.from(status.details[1]!.value, 'base64')).dates).toEqual(['2031-04-02']);
  });

  test('without a credential reflection is refused (UNAUTHENTICATED), v1 and v1alpha alike', async () => {
    for (const protocol of ['grpc-v1', 'grpc-v1alpha']) {
      const res = await bufCurl(['--reflect-protocol', protocol, '--list-methods', system.internalUrl]);
      // buf curl words UNAUTHENTICATED as "you are not authenticated" (and an advert for its registry).
      expect([res.code, res.stderr]).toEqual([expect.any(Number), expect.stringMatching(/not authenticated/i)]);
      expect(res.code).not.toBe(0);
      expect(res.stdout).not.toContain('psync.');
    }
    // The same with a Connect client, and with a credential nobody issued.
    const sessions = new Http2SessionManager(system.internalUrl);
    try {
      for (const header of [undefined, 'Bearer psync-test-credential-nobody-issued-0123456789abcdef']) {
        const bearer: Interceptor = (next) => (req) => {
          if (header) req.header.set('authorization', header);
          return next(req);
        };
        const client = createClient(ServerReflection, createGrpcTransport({ baseUrl: system.internalUrl, sessionManager: sessions, interceptors: [bearer] }));
        const err = await (async () => {
          try {
            for await (const _ of client.serverReflectionInfo(once({ messageRequest: { case: 'listServices', value: '' } }))) return undefined;
          } catch (e) {
            return ConnectError.from(e);
          }
        })();
        expect(err?.code).toBe(Code.Unauthenticated);
      }
    } finally {
      sessions.abort();
    }
  });

  test('one stream answers several questions in order, with transitive imports and NOT_FOUND', async () => {
    const sessions = new Http2SessionManager(system.internalUrl);
    try {
      const client = createClient(
        ServerReflection,
        createGrpcTransport({ baseUrl: system.internalUrl, sessionManager: sessions, interceptors: [credentialInterceptor('marketplace')] }),
      );
      const answers: ServerReflectionResponse[] = [];
      const questions: ReflectionInit[] = [
        { messageRequest: { case: 'fileContainingSymbol', value: 'psync.calendar.v1.CalendarService.PlaceHold' } },
        { messageRequest: { case: 'fileContainingSymbol', value: 'psync.calendar.v1.NoSuchThing' } },
        { messageRequest: { case: 'fileByFilename', value: 'google/protobuf/timestamp.proto' } },
        // No hosted service imports the error details, yet they are served (grpcurl decodes them with it).
        { messageRequest: { case: 'fileContainingSymbol', value: 'psync.common.v1.ConflictDetail' } },
      ];
      for await (const a of client.serverReflectionInfo(many(questions))) answers.push(a);
      expect(answers.map((a) => a.messageResponse.case)).toEqual(['fileDescriptorResponse', 'errorResponse', 'fileDescriptorResponse', 'fileDescriptorResponse']);
      expect(fileNames(answers[3]!)).toEqual(['psync/common/v1/errors.proto']);
      const names = fileNames(answers[0]!);
      expect(names[0]).toBe('psync/calendar/v1/calendar.proto');
      expect(names).toEqual(expect.arrayContaining(['psync/calendar/v1/events.proto', 'psync/common/v1/money.proto', 'google/protobuf/timestamp.proto']));
      expect(answers[1]!.messageResponse.value).toMatchObject({ errorCode: Code.NotFound });
      expect(answers[1]!.originalRequest?.messageRequest).toEqual({ case: 'fileContainingSymbol', value: 'psync.calendar.v1.NoSuchThing' });
    } finally {
      sessions.abort();
    }
  });
});

describe('the reflection index (one process hosts only what it serves)', () => {
  const index = new ReflectionIndex([CalendarService]);
  const ask = (messageRequest: MessageInitShape<typeof ServerReflectionRequestSchema>['messageRequest']) => create(ServerReflectionRequestSchema, { messageRequest });

  test('list_services names exactly the services given', () => {
    expect(answer(index, ask({ case: 'listServices', value: '*' })).messageResponse).toEqual({
      case: 'listServicesResponse',
      value: { service: [{ name: 'psync.calendar.v1.CalendarService' }] },
    });
  });

  test('file_containing_symbol finds services, methods, messages, nested enums, fields and enum values', () => {
    for (const symbol of [
      'psync.calendar.v1.CalendarService',
      'psync.calendar.v1.CalendarService.ConfirmBooking',
      'psync.calendar.v1.PlaceHoldRequest',
      'psync.calendar.v1.PlaceHoldRequest.idempotency_key',
      'psync.calendar.v1.BOOKING_STATUS_CONFIRMED',
      '.psync.calendar.v1.Booking',
    ]) {
      expect([symbol, answer(index, ask({ case: 'fileContainingSymbol', value: symbol })).messageResponse?.case]).toEqual([symbol, 'fileDescriptorResponse']);
    }
    const money = answer(index, ask({ case: 'fileContainingSymbol', value: 'psync.common.v1.Money' }));
    expect(fileNames(money)[0]).toBe('psync/common/v1/money.proto');
    // Not hosted by this index: the catalog.
    expect(answer(index, ask({ case: 'fileContainingSymbol', value: 'psync.catalog.v1.CatalogService' })).messageResponse).toMatchObject({
      case: 'errorResponse',
      value: { errorCode: Code.NotFound },
    });
  });

  test('extensions: none declared, so NOT_FOUND for one and an empty list for a known type', () => {
    expect(answer(index, ask({ case: 'fileContainingExtension', value: { containingType: 'psync.calendar.v1.Booking', extensionNumber: 100 } })).messageResponse).toMatchObject({
      case: 'errorResponse',
      value: { errorCode: Code.NotFound },
    });
    expect(answer(index, ask({ case: 'allExtensionNumbersOfType', value: 'psync.calendar.v1.Booking' })).messageResponse).toEqual({
      case: 'allExtensionNumbersResponse',
      value: { baseTypeName: 'psync.calendar.v1.Booking', extensionNumber: [] },
    });
    expect(answer(index, ask({ case: 'allExtensionNumbersOfType', value: 'psync.nope.v1.Nope' })).messageResponse).toMatchObject({
      case: 'errorResponse',
      value: { errorCode: Code.NotFound },
    });
  });

  test('no question → INVALID_ARGUMENT; every file sent parses as a FileDescriptorProto', () => {
    expect(answer(index, ask({ case: undefined })).messageResponse).toMatchObject({ case: 'errorResponse', value: { errorCode: Code.InvalidArgument } });
    const all = answer(index, ask({ case: 'fileByFilename', value: 'psync/calendar/v1/calendar.proto' }));
    const names = fileNames(all);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['psync/calendar/v1/calendar.proto', 'psync/calendar/v1/events.proto', 'google/protobuf/timestamp.proto']));
  });
});

type ReflectionInit = MessageInitShape<typeof ServerReflectionRequestSchema>;

async function* once(req: ReflectionInit) {
  yield create(ServerReflectionRequestSchema, req);
}

async function* many(reqs: ReflectionInit[]) {
  for (const r of reqs) yield create(ServerReflectionRequestSchema, r);
}

/** Names of the files in a file_descriptor_response, in order. */
function fileNames(a: { messageResponse?: { case?: string; value?: unknown } }): string[] {
  if (a.messageResponse?.case !== 'fileDescriptorResponse') throw new Error(`not a file answer: ${a.messageResponse?.case}`);
  const files = (a.messageResponse.value as { fileDescriptorProto: Uint8Array[] }).fileDescriptorProto;
  return files.map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
}
