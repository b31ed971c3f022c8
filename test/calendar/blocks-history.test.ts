/**
 * GET /blocks date filters against the running system, through CalendarService.ListBlocks
 * as the gateway calls it (`from` pages read one bounded range per
 * length class, migration 0006): the boundaries of `from` and `to`, blocks of every
 * length class reaching back to `from` (up to 730 nights), overlapping blocks and ties,
 * paging. Every expectation is computed from the blocks pushed (the spec's rule:
 * `from` keeps check_out > from, `to` keeps check_in <= to; ordered by check_in,
 * check_out, external_uid in byte order), so a block the per-class bound dropped, or
 * one it let in, fails the comparison.
 */
import { BlockReason, type Block } from '../../gen/psync/calendar/v1/calendar_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import { backends, type RunningSystem, useSystem } from '../support/system';
import { day, newListing, newWorkspace, type Clients } from './support';

jest.setTimeout(180_000);

let system: RunningSystem;
let c: Clients;
let ws: string;
let listing: string;

/** `from` of most cases: far enough from day(0) for a 730-night block to end on it. */
const F = 1000;
/** `to` of most cases. */
const T = 1040;

interface Pushed {
  uid: string;
  a: number;
  b: number;
}
const pushed: Pushed[] = [];

/** Lengths at and around every class boundary (1, 2, 4, …, 256, 730). */
const LENGTHS = [1, 2, 3, 4, 5, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 511, 512, 513, 729, 730];

const inUse = useSystem();

beforeAll(async () => {
  ({ system, clients: c } = inUse);
  ws = await newWorkspace(c);
  listing = await newListing(c, ws);
  const blocks: Pushed[] = [];
  for (const n of LENGTHS) {
    blocks.push({ uid: `reach-${String(n).padStart(3, '0')}`, a: F + 1 - n, b: F + 1 }); // its last night is `from`: listed
    blocks.push({ uid: `ends-${String(n).padStart(3, '0')}`, a: F - n, b: F }); // check_out = from: not listed
  }
  blocks.push(
    { uid: 'long-past', a: F - 900, b: F - 170 }, // 730 nights, over long before `from`
    { uid: 'to-start', a: T, b: T + 3 }, // check_in = to: listed
    { uid: 'to-after', a: T + 1, b: T + 2 }, // check_in = to + 1: not listed
    { uid: 'span-all', a: F - 300, b: T + 300 }, // 640 nights across both bounds
    // Overlapping blocks and ties: same check_in, same check_out; uids in byte order
    // ("B" < "a" < "b"), pushed out of order.
    { uid: 'ov-b', a: F + 2, b: F + 6 },
    { uid: 'ov-B', a: F + 2, b: F + 6 },
    { uid: 'ov-a', a: F + 2, b: F + 6 },
    { uid: 'ov-short', a: F + 2, b: F + 4 },
    { uid: 'ov-wide', a: F + 1, b: F + 10 },
    { uid: 'ov-longer', a: F + 2, b: F + 700 },
  );
  for (const blk of blocks) {
    const res = await c.calendar.putBlock({
      workspaceId: ws,
      externalUid: blk.uid,
      target: { case: 'listingId', value: listing },
      checkIn: day(blk.a),
      checkOut: day(blk.b),
      reason: BlockReason.MAINTENANCE,
    });
    expect(res.result).toBe(UpsertResult.CREATED);
    pushed.push(blk);
  }
  // Another workspace's blocks on the same nights are never listed.
  const other = await newWorkspace(c);
  const otherListing = await newListing(c, other);
  await c.calendar.putBlock({ workspaceId: other, externalUid: 'reach-001', target: { case: 'listingId', value: otherListing }, checkIn: day(F), checkOut: day(F + 1) });
});

const byteOrder = (x: string, y: string) => Buffer.compare(Buffer.from(x), Buffer.from(y));

/** What the spec says a listing with these filters holds, in the decided order. */
function expected(from?: number, to?: number): string[] {
  return pushed
    .filter((b) => (from === undefined || b.b > from) && (to === undefined || b.a <= to))
    .sort((x, y) => x.a - y.a || x.b - y.b || byteOrder(x.uid, y.uid))
    .map((b) => b.uid);
}

/** Every page of a listing, concatenated; checks has_more on the way. */
async function listAll(filters: { from?: string; to?: string }, pageSize: number): Promise<string[]> {
  const out: string[] = [];
  for (let page = 1; ; page++) {
    const res = await c.calendar.listBlocks({ workspaceId: ws, ...filters, page, pageSize });
    out.push(...res.items.map((b: Block) => b.externalUid));
    if (!res.hasMore) {
      // A page past the end: empty, has_more false.
      const past = await c.calendar.listBlocks({ workspaceId: ws, ...filters, page: page + 1, pageSize });
      expect([past.items, past.hasMore]).toEqual([[], false]);
      return out;
    }
    expect(res.items).toHaveLength(pageSize);
  }
}

test(`runs against ${backends.database} + ${backends.bus}`, () => {
  expect(system.internalUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
});

test('from: a block whose check_out equals from is not listed; one whose last night is from is, whatever its length (1–730 nights)', async () => {
  const res = await listAll({ from: day(F) }, 200);
  expect(res).toEqual(expected(F));
  for (const n of LENGTHS) {
    const pad = String(n).padStart(3, '0');
    expect(res).toContain(`reach-${pad}`);
    expect(res).not.toContain(`ends-${pad}`);
  }
  expect(res).not.toContain('long-past');
  expect(res).toContain('span-all');
  // The 730-night block reaching back from `from` comes first: it starts earliest.
  expect(res[0]).toBe('reach-730');
  // One day earlier, the blocks ending on `from` hold a night after it: listed too.
  const earlier = await listAll({ from: day(F - 1) }, 200);
  expect(earlier).toEqual(expected(F - 1));
  for (const n of LENGTHS) expect(earlier).toContain(`ends-${String(n).padStart(3, '0')}`);
});

test('to: a block starting on to is listed, one starting the day after is not', async () => {
  const res = await listAll({ to: day(T) }, 200);
  expect(res).toEqual(expected(undefined, T));
  expect(res).toContain('to-start');
  expect(res).not.toContain('to-after');
  expect(res).toContain('long-past');
  expect(await listAll({ to: day(T - 1) }, 200)).toEqual(expected(undefined, T - 1));
});

test('from and to together, at and around every boundary', async () => {
  for (const [from, to] of [
    [F, T],
    [F, F],
    [F + 1, F + 1],
    [F - 256, F - 255],
    [F - 730, F - 729],
    [F + 3, F + 2], // to before from: only blocks holding nights on both sides
    [F - 1, T + 1],
    [F + 6, F + 6],
    [F - 200, F - 160],
  ] as const) {
    expect([from, to, await listAll({ from: day(from), to: day(to) }, 200)]).toEqual([from, to, expected(from, to)]);
  }
  expect(expected(F + 3, F + 2)).toEqual(['span-all', 'ov-wide', 'ov-short', 'ov-B', 'ov-a', 'ov-b', 'ov-longer']);
});

test('overlapping blocks and ties: check_in, then check_out, then external_uid in byte order', async () => {
  const res = await listAll({ from: day(F + 1), to: day(F + 2) }, 200);
  const ov = res.filter((u) => u.startsWith('ov-'));
  expect(ov).toEqual(['ov-wide', 'ov-short', 'ov-B', 'ov-a', 'ov-b', 'ov-longer']);
  expect(res).toEqual(expected(F + 1, F + 2));
});

test('paging a `from` listing: every page size gives the same blocks, once each, in order', async () => {
  const whole = expected(F);
  expect(whole.length).toBeGreaterThan(30);
  for (const size of [1, 3, 7, 50]) expect(await listAll({ from: day(F) }, size)).toEqual(whole);
  for (const size of [2, 5]) expect(await listAll({ from: day(F - 10), to: day(F + 5) }, size)).toEqual(expected(F - 10, F + 5));
  const far = await c.calendar.listBlocks({ workspaceId: ws, from: day(F), page: 1000, pageSize: 200 });
  expect([far.items, far.hasMore]).toEqual([[], false]);
  // Nothing after the last block.
  const none = await c.calendar.listBlocks({ workspaceId: ws, from: day(F + 5000) });
  expect([none.items, none.hasMore]).toEqual([[], false]);
});
