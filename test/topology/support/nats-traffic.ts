/**
 * The traffic of the NATS node-loss test, and what it observed: block pushes through
 * the public gateway on several listings, bookings confirmed and cancelled through the
 * internal calendar API (as the marketplace does: an idempotency key per attempt, the
 * same key again after UNAVAILABLE), and a WatchEvents reader that resumes from its
 * cursor when its stream ends. Webhook deliveries are recorded by the test's receiver.
 */
import { randomUUID } from 'node:crypto';
import { Code, ConnectError } from '@connectrpc/connect';
import { CancellationInitiator } from '../../../gen/psync/calendar/v1/events_pb';
import { send, jsonRequest } from '../../gateway/http-client';
import type { Partner } from '../../gateway/partners';
import type { InternalClients } from '../../support/internal-clients';

export interface TrafficListing {
  partner: Partner;
  listingId: string;
}

/** One event as WatchEvents streamed it. */
export interface Watched {
  eventId: string;
  listingId: string;
  cursor: string;
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY = 86_400_000;

/** Counts of answers by status: HTTP statuses of the gateway, RPC outcomes as 200 (ok), 503 (UNAVAILABLE) or 500 (anything else). */
export type Statuses = Record<string, number>;

export class NatsTraffic {
  statuses: Statuses = {};
  /** Unexpected answers, for the failure message. */
  readonly oddities: string[] = [];
  /** Booking references the calendar acknowledged. */
  readonly confirmed: string[] = [];
  readonly cancelled: string[] = [];
  readonly watched: Watched[] = [];
  watchReconnects = 0;
  private running = false;
  private loops: Promise<void>[] = [];
  private watching = true;
  private watcher: Promise<void> | undefined;
  private readonly watchAbort = new AbortController();
  private blockSeq = 0;
  private bookingSeq = 0;

  constructor(
    private readonly gatewayUrl: string,
    private readonly clients: InternalClients,
    /** Clients without a call deadline, for the WatchEvents stream. */
    private readonly streamClients: InternalClients,
    private readonly listings: TrafficListing[],
  ) {}

  /** Returns the statuses counted since the last call and starts a new count. */
  takeStatuses(): Statuses {
    const s = this.statuses;
    this.statuses = {};
    return s;
  }

  private count(status: number | string, what: string): void {
    const key = String(status);
    this.statuses[key] = (this.statuses[key] ?? 0) + 1;
    if (key === '0' || (Number(key) >= 500 && key !== '503')) this.oddities.push(`${what} → ${key}`);
  }

  /** Starts the WatchEvents reader from the oldest event. */
  startWatching(): void {
    this.watcher = (async () => {
      let cursor: string | undefined;
      while (this.watching) {
        try {
          for await (const m of this.streamClients.calendar.watchEvents({ cursor }, { signal: this.watchAbort.signal })) {
            const v = m.event.value as { eventId: string; listingId: string } | undefined;
            if (v) this.watched.push({ eventId: v.eventId, listingId: v.listingId, cursor: m.cursor });
            cursor = m.cursor;
          }
        } catch (err) {
          if (!this.watching) return;
          this.oddities.push(`WatchEvents ended: ${String(err)}`);
        }
        if (!this.watching) return;
        this.watchReconnects++;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }

  /** Starts the block-push loops (one per listing) and the booking loop. */
  start(): void {
    this.running = true;
    this.loops = [...this.listings.map((l) => this.pushBlocks(l)), this.book()];
  }

  /** Stops the loops (the reader keeps reading). */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  async stopWatching(): Promise<void> {
    this.watching = false;
    this.watchAbort.abort();
    await this.watcher;
  }

  private async pushBlocks(l: TrafficListing): Promise<void> {
    while (this.running) {
      const n = this.blockSeq++;
      const start = Date.UTC(2027, 0, 1) + (n % 200) * 3 * DAY;
      const uid = `topo-${l.listingId}-${n % 200}`;
      const req =
        n % 5 === 4
          ? { method: 'DELETE', path: `/v1/blocks/${uid}`, headers: l.partner.auth }
          : jsonRequest('PUT', `/v1/blocks/${uid}`, { listing_id: l.listingId, check_in: day(start), check_out: day(start + 2 * DAY), reason: 'maintenance' }, l.partner.auth);
      const res = await send(this.gatewayUrl, req).catch((err: Error) => ({ status: 0, text: err.message }));
      this.count(res.status, `${req.method} ${req.path}${res.status >= 500 || res.status === 0 ? ` ${res.text.slice(0, 200)}` : ''}`);
      await new Promise((r) => setTimeout(r, 40));
    }
  }

  /** A call as the marketplace makes it: the same idempotency key again after UNAVAILABLE (at most 20 s). */
  private async call<T>(what: string, fn: (key: string) => Promise<T>): Promise<T | undefined> {
    const key = randomUUID();
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const r = await fn(key);
        this.count(200, what);
        return r;
      } catch (err) {
        const e = ConnectError.from(err);
        this.count(e.code === Code.Unavailable ? 503 : 500, `${what}: ${Code[e.code]} ${e.rawMessage}`);
        if (e.code !== Code.Unavailable || Date.now() > deadline) return undefined;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  private async book(): Promise<void> {
    while (this.running) {
      const n = this.bookingSeq++;
      const l = this.listings[n % this.listings.length]!;
      const start = Date.UTC(2031, 0, 1) + Math.floor(n / this.listings.length) * 3 * DAY;
      const res = await this.call('ConfirmBooking', (idempotencyKey) =>
        this.clients.calendar.confirmBooking({
          listingId: l.listingId,
          checkIn: day(start),
          checkOut: day(start + 2 * DAY),
          guestId: `guest-${n}`,
          guestName: `Guest ${n}`,
          partySize: 2,
          amountPaid: { value: '210.00', currency: 'EUR' },
          requiresPayment: false,
          idempotencyKey,
        }),
      );
      const ref = res?.booking?.bookingReference;
      if (ref) {
        this.confirmed.push(ref);
        if (n % 2 === 1) {
          const c = await this.call('CancelBooking', (idempotencyKey) =>
            this.clients.calendar.cancelBooking({ bookingReference: ref, initiatedBy: CancellationInitiator.GUEST, idempotencyKey }),
          );
          if (c) this.cancelled.push(ref);
        }
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}
