/**
 * The marketplace's view: CalendarService called by a stock
 * @grpc/grpc-js client that loads the published .proto files with
 * @grpc/proto-loader — no generated code of ours, unary and server-streaming, with
 * standard status codes and the ConflictDetail readable from grpc-status-details-bin,
 * authenticated as the marketplace with `authorization` metadata.
 */
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { BinaryReader } from '@bufbuild/protobuf/wire';
import { fromBinary } from '@bufbuild/protobuf';
import { ConflictDetailSchema } from '../../gen/psync/common/v1/errors_pb';
import { TEST_TOKENS } from '../support/credentials';
import { ROOT } from '../support/process';
import { startSystem, stopAllSystems, type RunningSystem } from '../support/system';
import { clientsFor, day, newListing, newWorkspace, type Clients } from './support';

jest.setTimeout(120_000);

type Callback<T> = (err: grpc.ServiceError | null, res?: T) => void;
interface StockCalendarClient extends grpc.Client {
  PlaceHold(req: object, cb: Callback<{ hold: { hold_id: string; expires_at: { seconds: string } } }>): void;
  ConfirmBooking(req: object, cb: Callback<{ booking: { booking_reference: string; status: string } }>): void;
  CancelBooking(req: object, cb: Callback<{ cancelled: boolean }>): void;
  GetAvailability(req: object, cb: Callback<{ nights: { date: string; available: boolean; holders: { kind: string; id: string }[] }[] }>): void;
  WatchEvents(req: object): grpc.ClientReadableStream<{ cursor: string; event: string; calendar_changed?: { kind: string }; booking_confirmed?: { booking_reference: string } }>;
}

let system: RunningSystem;
let c: Clients;
let stock: StockCalendarClient;
let listing: string;

beforeAll(async () => {
  system = await startSystem();
  c = clientsFor(system.internalUrl);
  const ws = await newWorkspace(c);
  listing = await newListing(c, ws);
  const def = protoLoader.loadSync('psync/calendar/v1/calendar.proto', {
    includeDirs: [join(ROOT, 'proto')],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { psync: { calendar: { v1: { CalendarService: grpc.ServiceClientConstructor } } } };
  const Ctor = pkg.psync.calendar.v1.CalendarService;
  // The marketplace's credential as gRPC metadata on every call (docs/security/internal-access.md).
  const marketplace: grpc.Interceptor = (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set('authorization', `Bearer ${TEST_TOKENS.marketplace}`);
        next(metadata, listener);
      },
    });
  stock = new Ctor(new URL(system.internalUrl).host, grpc.credentials.createInsecure(), { interceptors: [marketplace] }) as unknown as StockCalendarClient;
}, 120_000);

afterAll(async () => {
  stock?.close();
  c?.close();
  await stopAllSystems();
});

const call = <T>(fn: (cb: Callback<T>) => void): Promise<T> => new Promise((resolve, reject) => fn((err, res) => (err ? reject(err) : resolve(res as T))));

/** The ConflictDetail inside a grpc-status-details-bin (google.rpc.Status with Any details). */
function conflictDates(err: grpc.ServiceError): string[] {
  const bin = err.metadata.get('grpc-status-details-bin')[0];
  if (!bin) return [];
  const reader = new BinaryReader(typeof bin === 'string' ? Buffer.from(bin, 'base64') : bin);
  const dates: string[] = [];
  while (reader.pos < reader.len) {
    const [field, wire] = reader.tag();
    if (field !== 3) {
      reader.skip(wire);
      continue;
    }
    const any = new BinaryReader(reader.bytes());
    let typeUrl = '';
    let value: Uint8Array = new Uint8Array();
    while (any.pos < any.len) {
      const [f, w] = any.tag();
      if (f === 1) typeUrl = any.string();
      else if (f === 2) value = any.bytes();
      else any.skip(w);
    }
    if (typeUrl.endsWith('/psync.common.v1.ConflictDetail')) dates.push(...fromBinary(ConflictDetailSchema, value).dates);
  }
  return dates;
}

test('unary calls: hold, availability, booking from the hold, conflict as FAILED_PRECONDITION with its dates', async () => {
  const placed = await call<{ hold: { hold_id: string; expires_at: { seconds: string } } }>((cb) =>
    stock.PlaceHold({ listing_id: listing, check_in: day(0), check_out: day(2) }, cb),
  );
  expect(placed.hold.hold_id).toMatch(/^[0-9a-f-]{36}$/);
  expect(Number(placed.hold.expires_at.seconds)).toBeGreaterThan(Date.now() / 1000);

  const av = await call<{ nights: { date: string; available: boolean; holders: { kind: string; id: string }[] }[] }>((cb) =>
    stock.GetAvailability({ listing_id: listing, check_in: day(0), check_out: day(3) }, cb),
  );
  expect(av.nights.map((n) => [n.date, n.available, n.holders.map((h) => h.kind)])).toEqual([
    [day(0), false, ['NIGHT_HOLDER_KIND_HOLD']],
    [day(1), false, ['NIGHT_HOLDER_KIND_HOLD']],
    [day(2), true, []],
  ]);

  const err = await call((cb) => stock.PlaceHold({ listing_id: listing, check_in: day(1), check_out: day(4) }, cb)).catch((e: grpc.ServiceError) => e);
  expect((err as grpc.ServiceError).code).toBe(grpc.status.FAILED_PRECONDITION);
  expect(conflictDates(err as grpc.ServiceError)).toEqual([day(1)]);

  const booked = await call<{ booking: { booking_reference: string; status: string } }>((cb) =>
    stock.ConfirmBooking({ hold_id: placed.hold.hold_id, guest_id: 'g-grpc', guest_name: 'Stock Client', party_size: 2, amount_paid: { value: '10.00', currency: 'EUR' } }, cb),
  );
  expect(booked.booking.status).toBe('BOOKING_STATUS_CONFIRMED');
  const cancelled = await call<{ cancelled: boolean }>((cb) =>
    stock.CancelBooking({ booking_reference: booked.booking.booking_reference, initiated_by: 'CANCELLATION_INITIATOR_GUEST' }, cb),
  );
  expect(cancelled.cancelled).toBe(true);

  const missing = await call((cb) => stock.CancelBooking({ booking_reference: 'BK0000000000', initiated_by: 'CANCELLATION_INITIATOR_GUEST' }, cb)).catch(
    (e: grpc.ServiceError) => e,
  );
  expect((missing as grpc.ServiceError).code).toBe(grpc.status.NOT_FOUND);
});

test('server streaming: WatchEvents delivers the events with cursors and resumes from one', async () => {
  const read = (req: object, n: number) =>
    new Promise<{ cursor: string; event: string }[]>((resolve, reject) => {
      const got: { cursor: string; event: string }[] = [];
      const stream = stock.WatchEvents(req);
      stream.on('data', (m) => {
        got.push(m);
        if (got.length === n) {
          stream.cancel();
          resolve(got);
        }
      });
      stream.on('error', (e: grpc.ServiceError) => {
        if (e.code !== grpc.status.CANCELLED) reject(e);
      });
    });
  const all = await read({ listing_id: listing }, 5);
  expect(all.map((m) => m.event)).toEqual(['calendar_changed', 'calendar_changed', 'booking_confirmed', 'calendar_changed', 'booking_cancelled']);
  const resumed = await read({ listing_id: listing, cursor: all[2]!.cursor }, 2);
  expect(resumed.map((m) => m.cursor)).toEqual(all.slice(3).map((m) => m.cursor));
});
