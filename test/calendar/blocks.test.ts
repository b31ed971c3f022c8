/**
 * Partner blocks against the running system (spec: "Calendar block" and its state
 * table, PUT/DELETE/GET /blocks, Errors, Limits), through
 * CalendarService as the gateway calls it.
 */
import { Code } from '@connectrpc/connect';
import { BlockReason } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import { backends, type RunningSystem, useSystem } from '../support/system';
import { conflictDatesOf, connectErrorOf, day, newListing, newWorkspace, nights, reasonOf, uid, violationsOf, watch, type Clients } from './support';

jest.setTimeout(120_000);

let system: RunningSystem;
let c: Clients;
let ws: string;
let otherWs: string;

const inUse = useSystem();

beforeAll(async () => {
  ({ system, clients: c } = inUse);
  ws = await newWorkspace(c);
  otherWs = await newWorkspace(c);
});

const put = (listingId: string, externalUid: string, checkIn: string, checkOut: string, reason = BlockReason.UNSPECIFIED, workspaceId = ws) =>
  c.calendar.putBlock({ workspaceId, externalUid, target: { case: 'listingId', value: listingId }, checkIn, checkOut, reason });

const hold = (listingId: string, checkIn: string, checkOut: string) => c.calendar.placeHold({ listingId, checkIn, checkOut });

const book = (listingId: string, checkIn: string, checkOut: string) =>
  c.calendar.confirmBooking({
    listingId,
    checkIn,
    checkOut,
    guestId: uid('guest'),
    guestName: 'Test Guest',
    partySize: 2,
    amountPaid: { value: '100.00', currency: 'EUR' },
  });

async function availableNights(listingId: string, checkIn: string, checkOut: string): Promise<string[]> {
  const res = await c.calendar.getAvailability({ listingId, checkIn, checkOut });
  return res.nights.filter((n) => n.available).map((n) => n.date);
}

test(`runs against ${backends.database} + ${backends.bus}`, () => {
  expect(system.internalUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
});

describe('state table', () => {
  test('absent + PUT, no collision → created, nights held, result created', async () => {
    const listing = await newListing(c, ws);
    const res = await put(listing, uid('b'), day(0), day(3), BlockReason.MAINTENANCE);
    expect(res.result).toBe(UpsertResult.CREATED);
    expect(res.nights).toBe(3);
    expect(res.listingId).toBe(listing);
    expect(res.block?.reason).toBe(BlockReason.MAINTENANCE);
    // The departure day stays sellable.
    expect(await availableNights(listing, day(0), day(4))).toEqual([day(3)]);
  });

  test('held + identical PUT → updated, a no-op (nothing changes, no calendar event)', async () => {
    const listing = await newListing(c, ws);
    const id = uid('b');
    const first = await put(listing, id, day(10), day(12));
    const w = watch(c.calendar, { listingId: listing });
    try {
      await w.until((m) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === id);
      const again = await put(listing, id, day(10), day(12));
      expect(again.result).toBe(UpsertResult.UPDATED);
      expect(again.nights).toBe(2);
      expect(again.listingId).toBe(listing);
      expect(again.block?.updatedAt).toEqual(first.block?.updatedAt);
      // A later change on the listing arrives, and nothing came in between for the retry.
      const marker = await hold(listing, day(20), day(21));
      await w.until((m) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === marker.hold!.holdId);
      expect(w.received.filter((m) => m.event.case === 'calendarChanged' && m.event.value.holder?.id === id)).toHaveLength(1);
    } finally {
      await w.stop();
    }
  });

  test('held + PUT with other dates → moved in one step: old nights released, new held, result updated', async () => {
    const listing = await newListing(c, ws);
    const id = uid('b');
    await put(listing, id, day(0), day(4));
    const res = await put(listing, id, day(2), day(7));
    expect(res.result).toBe(UpsertResult.UPDATED);
    expect(res.nights).toBe(5);
    expect(await availableNights(listing, day(0), day(8))).toEqual([day(0), day(1), day(7)]);
    // The released nights can be held by the marketplace right away.
    await expect(hold(listing, day(0), day(2))).resolves.toBeDefined();
    const list = await c.calendar.listBlocks({ workspaceId: ws, from: day(0), to: day(10) });
    expect(list.items.filter((b) => b.externalUid === id).map((b) => [b.checkIn, b.checkOut])).toEqual([[day(2), day(7)]]);
  });

  test('a block moved to another listing of the workspace frees the first listing', async () => {
    const a = await newListing(c, ws);
    const b = await newListing(c, ws);
    const id = uid('b');
    await put(a, id, day(0), day(2));
    const res = await put(b, id, day(0), day(2));
    expect(res.result).toBe(UpsertResult.UPDATED);
    expect(res.listingId).toBe(b);
    expect(await availableNights(a, day(0), day(2))).toEqual([day(0), day(1)]);
    expect(await availableNights(b, day(0), day(2))).toEqual([]);
  });

  test('any + PUT over a live hold → conflict listing every colliding night, nothing written', async () => {
    const listing = await newListing(c, ws);
    await hold(listing, day(3), day(6));
    const id = uid('b');
    const err = await connectErrorOf(put(listing, id, day(0), day(10)));
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(reasonOf(err)).toBe(ErrorReason.CONFLICT);
    expect(conflictDatesOf(err)).toEqual([day(3), day(4), day(5)]);
    const list = await c.calendar.listBlocks({ workspaceId: ws, pageSize: 200 });
    expect(list.items.some((b) => b.externalUid === id)).toBe(false);
    // The retry of a refused push is scanned again and refused again.
    const again = await connectErrorOf(put(listing, id, day(0), day(10)));
    expect(conflictDatesOf(again)).toEqual([day(3), day(4), day(5)]);
  });

  test('held + move over a booking → conflict; the block keeps its old dates', async () => {
    const listing = await newListing(c, ws);
    const id = uid('b');
    await put(listing, id, day(0), day(2));
    await book(listing, day(4), day(6));
    const err = await connectErrorOf(put(listing, id, day(1), day(8)));
    expect(reasonOf(err)).toBe(ErrorReason.CONFLICT);
    expect(conflictDatesOf(err)).toEqual([day(4), day(5)]);
    const list = await c.calendar.listBlocks({ workspaceId: ws, to: day(10), from: day(0) });
    expect(list.items.filter((b) => b.externalUid === id).map((b) => [b.checkIn, b.checkOut])).toEqual([[day(0), day(2)]]);
    expect(await availableNights(listing, day(0), day(8))).toEqual([day(2), day(3), day(6), day(7)]);
  });

  test('conflicts list every colliding date, untruncated, across holds and bookings, ascending', async () => {
    const listing = await newListing(c, ws);
    await hold(listing, day(100), day(400)); // 300 nights
    await book(listing, day(500), day(520));
    const err = await connectErrorOf(put(listing, uid('b'), day(50), day(780))); // 730 nights
    expect(conflictDatesOf(err)).toEqual([...nights(day(100), day(400)), ...nights(day(500), day(520))]);
  });

  test("a partner's own blocks may overlap each other, and nights of a host-cancelled booking", async () => {
    const listing = await newListing(c, ws);
    await put(listing, uid('b'), day(0), day(5));
    await expect(put(listing, uid('b'), day(2), day(8))).resolves.toMatchObject({ result: UpsertResult.CREATED });
    const booking = await book(listing, day(10), day(12));
    await c.calendar.cancelBooking({ bookingReference: booking.booking!.bookingReference, initiatedBy: CancellationInitiator.HOST });
    await expect(put(listing, uid('b'), day(9), day(13))).resolves.toMatchObject({ result: UpsertResult.CREATED, nights: 4 });
  });

  test('held + DELETE → removed; only the nights it holds are freed', async () => {
    const listing = await newListing(c, ws);
    const a = uid('a');
    const b = uid('b');
    await put(listing, a, day(0), day(5));
    await put(listing, b, day(3), day(8));
    // A night unavailable for another reason: a host-cancelled booking keeps its nights closed.
    const booking = await book(listing, day(10), day(12));
    await c.calendar.cancelBooking({ bookingReference: booking.booking!.bookingReference, initiatedBy: CancellationInitiator.HOST });
    const c2 = uid('c');
    await put(listing, c2, day(9), day(12));

    expect(await c.calendar.deleteBlock({ workspaceId: ws, externalUid: a })).toMatchObject({ deleted: true });
    // Nights only `a` held are hold-able at once ...
    await expect(hold(listing, day(0), day(3))).resolves.toBeDefined();
    // ... nights `b` still holds are not.
    const err = await connectErrorOf(hold(listing, day(2), day(5)));
    expect(conflictDatesOf(err)).toEqual([day(2), day(3), day(4)]);

    await c.calendar.deleteBlock({ workspaceId: ws, externalUid: c2 });
    expect(await availableNights(listing, day(9), day(12))).toEqual([day(9)]);
    const closed = await connectErrorOf(hold(listing, day(10), day(11)));
    expect(conflictDatesOf(closed)).toEqual([day(10)]);
  });

  test('absent + DELETE → success, nothing to do', async () => {
    await expect(c.calendar.deleteBlock({ workspaceId: ws, externalUid: uid('never') })).resolves.toMatchObject({ deleted: false });
  });

  test("DELETE only ever touches the caller's workspace", async () => {
    const listing = await newListing(c, ws);
    const id = uid('b');
    await put(listing, id, day(0), day(2));
    await expect(c.calendar.deleteBlock({ workspaceId: otherWs, externalUid: id })).resolves.toMatchObject({ deleted: false });
    expect(await availableNights(listing, day(0), day(2))).toEqual([]);
  });
});

describe('errors', () => {
  test('provider_id → UNIMPLEMENTED (NOT_ENABLED), after validation', async () => {
    const err = await connectErrorOf(
      c.calendar.putBlock({ workspaceId: ws, externalUid: uid('b'), target: { case: 'providerId', value: 'p-1' }, checkIn: day(0), checkOut: day(1) }),
    );
    expect(err.code).toBe(Code.Unimplemented);
    expect(reasonOf(err)).toBe(ErrorReason.NOT_ENABLED);
    const invalid = await connectErrorOf(
      c.calendar.putBlock({ workspaceId: ws, externalUid: uid('b'), target: { case: 'providerId', value: 'p-1' }, checkIn: day(1), checkOut: day(1) }),
    );
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(violationsOf(invalid)).toEqual([{ field: 'check_out', code: 'invalid' }]);
  });

  test('neither listing_id nor provider_id → INVALID_ARGUMENT on the oneof target (required)', async () => {
    const err = await connectErrorOf(c.calendar.putBlock({ workspaceId: ws, externalUid: uid('b'), checkIn: day(0), checkOut: day(1) }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(reasonOf(err)).toBe(ErrorReason.VALIDATION_FAILED);
    expect(violationsOf(err)).toEqual([{ field: 'target', code: 'required' }]);
  });

  test('unknown and foreign listings → the same NOT_FOUND (PROPERTY_NOT_FOUND)', async () => {
    const foreign = await newListing(c, otherWs);
    const a = await connectErrorOf(put('lst_doesnotexist000000000000', uid('b'), day(0), day(1)));
    const b = await connectErrorOf(put(foreign, uid('b'), day(0), day(1)));
    for (const e of [a, b]) {
      expect(e.code).toBe(Code.NotFound);
      expect(reasonOf(e)).toBe(ErrorReason.PROPERTY_NOT_FOUND);
    }
    expect(a.rawMessage).toBe(b.rawMessage);
    // Nothing was written on the foreign listing.
    expect(await availableNights(foreign, day(0), day(1))).toEqual([day(0)]);
  });

  test('1 to 730 nights; departure day exclusive', async () => {
    const listing = await newListing(c, ws);
    await expect(put(listing, uid('b'), day(0), day(1))).resolves.toMatchObject({ nights: 1 });
    await expect(put(listing, uid('b'), day(0), day(730))).resolves.toMatchObject({ nights: 730 });
    for (const [a, b, code] of [
      [day(0), day(731), 'maximum'],
      [day(5), day(5), 'invalid'],
      [day(5), day(4), 'invalid'],
    ] as const) {
      const err = await connectErrorOf(put(listing, uid('b'), a, b));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(violationsOf(err)).toEqual([{ field: 'check_out', code }]);
    }
  });

  test('malformed dates, external_uid bounds and an unknown reason → INVALID_ARGUMENT naming each field', async () => {
    const listing = await newListing(c, ws);
    const err = await connectErrorOf(
      c.calendar.putBlock({
        workspaceId: ws,
        externalUid: 'x'.repeat(256),
        target: { case: 'listingId', value: listing },
        checkIn: '2031-02-30',
        checkOut: '31-03-01',
        reason: 99 as BlockReason,
      }),
    );
    expect(violationsOf(err)).toEqual([
      { field: 'external_uid', code: 'max_length' },
      { field: 'check_in', code: 'format' },
      { field: 'check_out', code: 'format' },
      { field: 'reason', code: 'enum' },
    ]);
    const empty = await connectErrorOf(put(listing, '', day(0), day(1)));
    expect(violationsOf(empty)).toEqual([{ field: 'external_uid', code: 'required' }]);
    await expect(put(listing, 'x'.repeat(255), day(0), day(1))).resolves.toMatchObject({ result: UpsertResult.CREATED });
  });

  test('ListBlocks bounds: page >= 1, page_size 1 to 200, dates well-formed', async () => {
    const bad = await connectErrorOf(c.calendar.listBlocks({ workspaceId: ws, page: -1, pageSize: 201, from: '2031-1-1', to: 'x' }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(violationsOf(bad)).toEqual([
      { field: 'from', code: 'format' },
      { field: 'to', code: 'format' },
      { field: 'page', code: 'minimum' },
      { field: 'page_size', code: 'maximum' },
    ]);
    await expect(c.calendar.listBlocks({ workspaceId: ws, pageSize: 200 })).resolves.toBeDefined();
  });
});

describe('GET /blocks semantics', () => {
  let wsList: string;
  let listing: string;
  beforeAll(async () => {
    wsList = await newWorkspace(c);
    listing = await newListing(c, wsList);
    const p = (id: string, a: string, b: string) => put(listing, id, a, b, BlockReason.OWNER_STAY, wsList);
    // Deliberately pushed out of order.
    await p('e', day(20), day(25));
    await p('b', day(10), day(12));
    await p('a', day(10), day(12));
    await p('c', day(10), day(11));
    await p('d', day(12), day(15));
    // Another workspace's block on its own listing, same uid: never listed here.
    const foreign = await newListing(c, otherWs);
    await put(foreign, 'a', day(10), day(12), BlockReason.OTHER, otherWs);
  });

  const uids = (items: { externalUid: string }[]) => items.map((b) => b.externalUid);

  test("only the caller's blocks, ordered by check_in, check_out, external_uid; list item fields", async () => {
    const res = await c.calendar.listBlocks({ workspaceId: wsList });
    expect(uids(res.items)).toEqual(['c', 'a', 'b', 'd', 'e']);
    expect(res.hasMore).toBe(false);
    expect(res.items[0]).toMatchObject({ externalUid: 'c', listingId: listing, checkIn: day(10), checkOut: day(11), reason: BlockReason.OWNER_STAY, nights: 1 });
  });

  test('from: a block whose check_out equals from is not returned', async () => {
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, from: day(12) })).items)).toEqual(['d', 'e']);
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, from: day(11) })).items)).toEqual(['a', 'b', 'd', 'e']);
  });

  test('to: blocks holding a night on or before it', async () => {
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, to: day(12) })).items)).toEqual(['c', 'a', 'b', 'd']);
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, to: day(11) })).items)).toEqual(['c', 'a', 'b']);
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, from: day(14), to: day(20) })).items)).toEqual(['d', 'e']);
    expect(uids((await c.calendar.listBlocks({ workspaceId: wsList, from: day(15), to: day(19) })).items)).toEqual([]);
  });

  test('page and page_size with has_more; a page past the end is empty with has_more false', async () => {
    const p1 = await c.calendar.listBlocks({ workspaceId: wsList, page: 1, pageSize: 2 });
    const p2 = await c.calendar.listBlocks({ workspaceId: wsList, page: 2, pageSize: 2 });
    const p3 = await c.calendar.listBlocks({ workspaceId: wsList, page: 3, pageSize: 2 });
    const p4 = await c.calendar.listBlocks({ workspaceId: wsList, page: 4, pageSize: 2 });
    expect([uids(p1.items), p1.hasMore]).toEqual([['c', 'a'], true]);
    expect([uids(p2.items), p2.hasMore]).toEqual([['b', 'd'], true]);
    expect([uids(p3.items), p3.hasMore]).toEqual([['e'], false]);
    expect([uids(p4.items), p4.hasMore]).toEqual([[], false]);
    const exact = await c.calendar.listBlocks({ workspaceId: wsList, page: 1, pageSize: 5 });
    expect([exact.items.length, exact.hasMore]).toEqual([5, false]);
  });

  test('defaults: page 1, page_size 50', async () => {
    const many = await newWorkspace(c);
    const l = await newListing(c, many);
    for (let i = 0; i < 51; i++) await put(l, `m${String(i).padStart(2, '0')}`, day(i), day(i + 1), BlockReason.UNSPECIFIED, many);
    const res = await c.calendar.listBlocks({ workspaceId: many });
    expect(res.items).toHaveLength(50);
    expect(res.hasMore).toBe(true);
    expect(res.items[0]?.reason).toBe(BlockReason.RESERVED);
  });
});
