/**
 * The calendar's operator commands (docs/operator-cli.md): `psync hold place|release`,
 * `psync booking confirm|cancel|show`, `psync user erase` — one JSON object on stdout
 * and exit 0; one line on stderr and a non-zero exit otherwise. psync calls with the
 * operator's test credential (PSYNC_TOKEN).
 */
import { BookingStatus } from '../../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../../gen/psync/calendar/v1/events_pb';
import { TEST_TOKENS } from '../support/credentials';
import { runCommand, type RunningSystem, useSystem } from '../support/system';
import { day, newListing, newWorkspace, uid, type Clients } from './support';

jest.setTimeout(120_000);

let system: RunningSystem;
let c: Clients;
let listing: string;

const inUse = useSystem();

beforeAll(async () => {
  ({ system, clients: c } = inUse);
  listing = await newListing(c, await newWorkspace(c));
});

async function psync(...args: string[]) {
  const res = await runCommand('bin/psync', args, { ...process.env, PSYNC_INTERNAL_URL: system.internalUrl, PSYNC_TOKEN: TEST_TOKENS.operator });
  return { ...res, json: res.code === 0 ? (JSON.parse(res.stdout) as Record<string, unknown>) : undefined };
}

test('hold place / hold release', async () => {
  const placed = await psync('hold', 'place', '--listing', listing, '--check-in', day(0), '--check-out', day(2));
  expect(placed.code).toBe(0);
  expect(Object.keys(placed.json!)).toEqual(['hold_id']);
  const holdId = placed.json!.hold_id as string;
  const av = await c.calendar.getAvailability({ listingId: listing, checkIn: day(0), checkOut: day(2) });
  expect(av.nights.every((n) => !n.available)).toBe(true);

  const released = await psync('hold', 'release', '--hold', holdId);
  expect(released.code).toBe(0);
  expect(released.json).toEqual({ hold_id: holdId, released: true });

  const conflictFree = await psync('hold', 'place', '--listing', listing, '--check-in', day(0), '--check-out', day(2), '--ttl-seconds', '60');
  expect(conflictFree.code).toBe(0);
  // The nights are held now: a second hold fails with one line on stderr.
  const refused = await psync('hold', 'place', '--listing', listing, '--check-in', day(1), '--check-out', day(3));
  expect(refused.code).toBe(1);
  expect(refused.stdout).toBe('');
  expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  expect(refused.stderr).toBe(`psync: conflict: night ${day(1)} is already taken\n`);
});

test('booking confirm / booking cancel / user erase', async () => {
  const guest = uid('guest');
  const confirmed = await psync(
    'booking',
    'confirm',
    '--listing',
    listing,
    '--check-in',
    day(10),
    '--check-out',
    day(13),
    '--guest-id',
    guest,
    '--guest-name',
    'Katherine Johnson',
    '--party-size',
    '3',
    '--amount',
    '123.45',
    '--currency',
    'EUR',
  );
  expect(confirmed.code).toBe(0);
  expect(Object.keys(confirmed.json!)).toEqual(['booking_reference']);
  const ref = confirmed.json!.booking_reference as string;
  const b = (await c.calendar.getBooking({ bookingReference: ref })).booking!;
  expect(b).toMatchObject({ checkIn: day(10), checkOut: day(13), partySize: 3, guestName: 'Katherine Johnson', amountPaid: { value: '123.45', currency: 'EUR' } });

  const cancelled = await psync('booking', 'cancel', '--booking', ref, '--initiated-by', 'host');
  expect(cancelled.code).toBe(0);
  expect(cancelled.json).toEqual({ booking_reference: ref, cancelled: true });
  expect((await c.calendar.getBooking({ bookingReference: ref })).booking).toMatchObject({ status: BookingStatus.CANCELLED, initiatedBy: CancellationInitiator.HOST });

  const shown = await psync('booking', 'show', '--booking', ref);
  expect(shown.code).toBe(0);
  expect(shown.stderr).toBe('');
  expect(shown.json).toMatchObject({
    booking_reference: ref,
    listing_id: listing,
    check_in: day(10),
    check_out: day(13),
    party_size: 3,
    guest_name: 'Katherine Johnson',
    amount_paid: { value: '123.45', currency: 'EUR' },
    status: 'cancelled',
    initiated_by: 'host',
  });
  expect(new Date(shown.json!.cancelled_at as string).toISOString()).toBe(shown.json!.cancelled_at);

  const erased = await psync('user', 'erase', '--guest-id', guest);
  expect(erased.code).toBe(0);
  expect(Object.keys(erased.json!)).toEqual(['erasure_id']);
  expect((await c.calendar.getBooking({ bookingReference: ref })).booking?.guestName).toBe('');

  const unknown = await psync('booking', 'show', '--booking', 'BK0000000000');
  expect(unknown.code).toBe(1);
  expect(unknown.stdout).toBe('');
  expect(unknown.stderr.trim().split('\n')).toHaveLength(1);
  expect(unknown.stderr).toMatch(/not ?found/i);
});

test('usage errors exit 2 with one line', async () => {
  for (const args of [
    ['booking', 'cancel', '--booking', 'BK0000000000', '--initiated-by', 'nobody'],
    ['hold', 'place', '--listing', listing, '--check-in', day(0)],
    [
      'booking',
      'confirm',
      '--listing',
      listing,
      '--check-in',
      day(0),
      '--check-out',
      day(1),
      '--guest-id',
      'g',
      '--guest-name',
      'G',
      '--party-size',
      'two',
      '--amount',
      '1',
      '--currency',
      'EUR',
    ],
  ]) {
    const res = await psync(...args);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim().split('\n')).toHaveLength(1);
  }
});
