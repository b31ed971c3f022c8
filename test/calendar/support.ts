/**
 * Helpers of the calendar integration tests: Connect clients (gRPC over h2c) to a
 * running system's internal port, workspace and listing factories, dates, error
 * details, and a reader of the WatchEvents stream.
 */
import { type WatchEventsResponse } from '../../gen/psync/calendar/v1/calendar_pb';
import { PropertyStatus } from '../../gen/psync/catalog/v1/catalog_pb';
import { createWorkspace, internalClients, type CalendarClient, type InternalClients } from '../support/internal-clients';

export type { CalendarClient };
export type Clients = InternalClients;

/** Clients of the calendar, catalog and identity services at a system's internal URL. */
export const clientsFor = internalClients;

/** A new workspace's id. */
export function newWorkspace(c: Clients, env: 'sandbox' | 'production' = 'sandbox'): Promise<string> {
  return createWorkspace(c.identity, env, 'calendar test');
}

/** A new marketplace listing (not pushed by the partner) of `workspaceId`. */
export async function newListing(c: Clients, workspaceId: string, times?: { checkInTime: string; checkOutTime: string }): Promise<string> {
  const res = await c.catalog.createListing({ workspaceId, ...times });
  return res.listing!.listingId;
}

/** "YYYY-MM-DD" `days` after 2031-01-01 (fixed future dates keep tests readable). */
export function day(days: number): string {
  const d = new Date(Date.UTC(2031, 0, 1) + days * 86_400_000);
  return d.toISOString().slice(0, 10);
}

/** Every night of [a, b) as "YYYY-MM-DD". */
export function nights(a: string, b: string): string[] {
  const out: string[] = [];
  for (let t = Date.parse(`${a}T00:00:00Z`); t < Date.parse(`${b}T00:00:00Z`); t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

export { connectErrorOf, reasonOf, violationsOf, conflictDatesOf } from '../support/connect-errors';

let counter = 0;
/** A fresh identifier with a readable label. */
export const uid = (label = 'u'): string => `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

/** Waits until `fn` returns a truthy value (polling every 100 ms). */
export async function eventually<T>(fn: () => Promise<T | undefined | false | null>, timeoutMs = 20000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A WatchEvents stream being read in the background. */
export interface Watcher {
  received: WatchEventsResponse[];
  /** Resolves once `pred` matches some received message (or rejects after timeoutMs). */
  until(pred: (m: WatchEventsResponse) => boolean, timeoutMs?: number): Promise<WatchEventsResponse>;
  /** Ends the stream. */
  stop(): Promise<void>;
  /** Rejection of the stream, if it failed. */
  error(): unknown;
}

/** Opens WatchEvents with `req` and collects everything it sends. */
export function watch(calendar: CalendarClient, req: { cursor?: string; listingId?: string; workspaceId?: string }): Watcher {
  const abort = new AbortController();
  const received: WatchEventsResponse[] = [];
  let failure: Error | undefined;
  const loop = (async () => {
    try {
      for await (const m of calendar.watchEvents(req, { signal: abort.signal, timeoutMs: 0 })) received.push(m);
    } catch (err) {
      if (!abort.signal.aborted) failure = err instanceof Error ? err : new Error(String(err));
    }
  })();
  return {
    received,
    async until(pred, timeoutMs = 15000) {
      return eventually(
        async () => {
          if (failure) throw failure;
          return received.find(pred);
        },
        timeoutMs,
        'a WatchEvents message',
      );
    },
    async stop() {
      abort.abort();
      await loop;
    },
    error: () => failure,
  };
}

/**
 * A property the partner pushed (so its listing has a provider_id): complete, with one
 * photo at `photoUrl`; resolves with its listing id once the photo is processed.
 */
export async function pushedListing(c: Clients, workspaceId: string, providerId: string, photoUrl: string, timeoutMs = 45000): Promise<string> {
  await c.catalog.upsertProperty({
    workspaceId,
    providerId,
    property: {
      name: 'Villa on the calendar',
      propertyType: 'villa',
      address: { line1: '2 Chemin des Vignes', city: 'Arles', country: 'FR', latitude: 43.6768, longitude: 4.6303 },
      occupancy: { maxGuests: 6, bedrooms: 3, beds: 3, bathrooms: 2 },
      baseRate: { value: '240.00', currency: 'EUR' },
      amenities: ['wifi', 'kitchen', 'pool'],
      photos: [{ url: photoUrl, position: 0 }],
      checkInTime: '17:00',
      checkOutTime: '10:00',
      status: PropertyStatus.LISTED,
    },
  });
  return eventually(async () => (await c.catalog.getProperty({ workspaceId, providerId })).listingId, timeoutMs, `a listing id for ${providerId}`);
}
