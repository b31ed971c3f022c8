/**
 * Replays listings' calendar_changed events in WatchEvents order (xid, seq) and reports
 * every point where the log says a night was held by a marketplace holder (hold,
 * booking) together with any other holder — a state the calendar can never be in, so a
 * log that shows it is out of order. Events of one transaction are applied together
 * (a conversion releases the hold and holds the booking in one commit). A `withdrawn`
 * holder takes over its booking's nights (a cancellation by the host writes only the
 * withdrawn claim's event), and a booking confirmed from a hold takes over the hold
 * holding exactly its nights (its event names only the booking).
 *
 * Reads the plain bodies (migration 0008 on); rows written as bytes before it are not
 * expected in a fresh test database.
 */
import type { Sql } from '../../../services/kit/db';

interface NightRange {
  check_in: string;
  check_out: string;
}

interface ChangeBody {
  listing_id: string;
  kind: string;
  holder_kind: string;
  holder_id: string;
  released: NightRange | null;
  held: NightRange | null;
}

function nightsOf(range: NightRange | null): string[] {
  if (!range) return [];
  const out: string[] = [];
  for (let d = new Date(`${range.check_in}T00:00:00Z`); d < new Date(`${range.check_out}T00:00:00Z`); d.setUTCDate(d.getUTCDate() + 1)) {
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

const MARKETPLACE = new Set(['hold', 'booking']);

/**
 * A booking confirmed from a hold takes the hold's claim over; its event names only the
 * booking. The hold converted is the one holding exactly the booking's nights.
 */
function convertHold(holders: Map<string, Set<string>>, listing: string, nights: string[]): void {
  const first = holders.get(`${listing}/${nights[0]}`);
  for (const h of [...(first ?? [])].filter((x) => x.startsWith('hold:'))) {
    const held = [...holders.entries()].filter(([key, set]) => key.startsWith(`${listing}/`) && set.has(h)).map(([key]) => key.slice(listing.length + 1));
    if (held.length === nights.length && held.every((n) => nights.includes(n))) {
      for (const n of nights) holders.get(`${listing}/${n}`)!.delete(h);
      return;
    }
  }
}

/** The impossible states the log of `listings` passes through; empty when it replays cleanly. */
export async function eventLogAnomalies(sql: Sql, listings: readonly string[]): Promise<string[]> {
  const rows = await sql<{ xid: string; seq: string; body: ChangeBody }[]>`
    select xid::text, seq::text, body from calendar.events
    where listing_id in ${sql(listings)} and type = 'calendar_changed' and body is not null
    order by xid, seq`;
  const holders = new Map<string, Set<string>>(); // listing/night → holders
  const anomalies: string[] = [];
  for (let i = 0; i < rows.length;) {
    const xid = rows[i]!.xid;
    const touched = new Set<string>();
    for (; i < rows.length && rows[i]!.xid === xid; i++) {
      const e = rows[i]!.body;
      const holder = `${e.holder_kind}:${e.holder_id}`;
      for (const night of nightsOf(e.released)) holders.get(`${e.listing_id}/${night}`)?.delete(holder);
      if (e.kind === 'booking_confirmed') convertHold(holders, e.listing_id, nightsOf(e.held));
      for (const night of nightsOf(e.held)) {
        const key = `${e.listing_id}/${night}`;
        if (!holders.has(key)) holders.set(key, new Set());
        holders.get(key)!.add(holder);
        // A cancellation by the host turns the booking's claim into a withdrawn one.
        if (e.holder_kind === 'withdrawn') holders.get(key)!.delete(`booking:${e.holder_id}`);
        touched.add(key);
      }
    }
    for (const key of touched) {
      const set = [...holders.get(key)!];
      if (set.length > 1 && set.some((h) => MARKETPLACE.has(h.split(':')[0]!))) {
        anomalies.push(`${key} held by ${set.join(' and ')} after transaction ${xid}`);
      }
    }
  }
  return anomalies;
}
