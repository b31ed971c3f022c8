/**
 * Commit → `WatchEvents` lag under a block-push load: one unfiltered stream (gRPC)
 * records when each `CalendarChanged` arrives, and pushes (`CalendarService.PutBlock`,
 * open loop: a push starts every 1/rate s whether or not the previous one answered,
 * fresh uids round-robin over the listings) record when they were answered. Lag of an
 * event = arrival − answer (the writer knows it committed); negative counts as 0.
 * Shared by bench/calendar-stream.ts and bench/event-pipeline.ts.
 */
import { randomBytes } from 'node:crypto';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CalendarService } from '../../gen/psync/calendar/v1/calendar_pb';
import { credentialInterceptor } from '../../test/support/credentials';
import type { BenchSystem } from './bench-system';

/**
 * Pushes in flight at most: past it the open loop falls behind its schedule instead of
 * opening ever more HTTP/2 streams (the internal server refuses more than 1,000 per
 * connection); the achieved rate is reported.
 */
const MAX_IN_FLIGHT = 500;

const day = (n: number) => new Date(Date.UTC(2030, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const quantile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
export const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

export interface LagResult {
  /** Pushes answered. */
  events: number;
  /** Lags, sorted ascending (ms). */
  lags: number[];
  /** PutBlock latencies, sorted ascending (ms). */
  latency: number[];
  /** Failed pushes plus events that never arrived. */
  lost: number;
  /** From the end of the pushes (last answer) to the arrival of the last event (ms; 0 if all arrived before). */
  drainMs: number;
  /** Pushes answered per second, from the first push to the last answer. */
  achievedRate: number;
}

export interface LagProbe {
  /** Pushes at `rate` per second for `seconds` and waits (bounded) for every event. */
  run(phase: string, rate: number, seconds: number): Promise<LagResult>;
  /** Ends the stream. */
  close(): Promise<void>;
}

/** Opens the stream on `system` and returns the probe that pushes to `listings` of workspace `ws`. */
export function openLagProbe(system: BenchSystem, ws: string, listings: string[]): LagProbe {
  const { calendar } = system;
  // The stream on a connection of its own, so that the pushes' streams cannot take it down.
  const streamSession = new Http2SessionManager(system.internal);
  const streamClient = createClient(CalendarService, createGrpcTransport({ baseUrl: system.internal, sessionManager: streamSession, interceptors: [credentialInterceptor()] }));
  const abort = new AbortController();
  // Every CalendarChanged's holder id (the block's uid) → arrival time.
  const arrived = new Map<string, number>();
  let streamError: unknown = null;
  const stream = (async () => {
    try {
      for await (const m of streamClient.watchEvents({}, { signal: abort.signal, timeoutMs: 0 })) {
        if (m.event.case === 'calendarChanged' && m.event.value.holder) arrived.set(m.event.value.holder.id, performance.now());
      }
    } catch (err) {
      if (!abort.signal.aborted) streamError = err;
    }
  })();
  const run = randomBytes(3).toString('hex');
  let n = 0;

  return {
    async run(phase, rate, seconds) {
      const answered = new Map<string, number>();
      const latency: number[] = [];
      let failed = 0;
      const inFlight: Promise<void>[] = [];
      let open = 0;
      let slotFreed: (() => void) | null = null;
      const t0 = performance.now();
      const total = Math.round(seconds * rate);
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        while (open >= MAX_IN_FLIGHT) await new Promise<void>((r) => (slotFreed = r));
        open++;
        const k = n++;
        const uid = `${phase}-${run}-${k}`;
        const start = Math.floor(Math.random() * 700);
        const began = performance.now();
        inFlight.push(
          calendar
            .putBlock({
              workspaceId: ws,
              externalUid: uid,
              target: { case: 'listingId', value: listings[k % listings.length]! },
              checkIn: day(start),
              checkOut: day(start + 1 + Math.floor(Math.random() * 30)),
            })
            .then(() => {
              const now = performance.now();
              answered.set(uid, now);
              latency.push(now - began);
            })
            .catch(() => void failed++)
            .finally(() => {
              open--;
              slotFreed?.();
              slotFreed = null;
            }),
        );
      }
      await Promise.all(inFlight);
      let lastAnswer = 0;
      for (const t of answered.values()) lastAnswer = Math.max(lastAnswer, t);
      // Every event must arrive; wait for the stragglers (bounded).
      const deadline = performance.now() + 30_000;
      while ([...answered.keys()].some((u) => !arrived.has(u)) && performance.now() < deadline) await sleep(10);
      if (streamError) throw streamError instanceof Error ? streamError : new Error(String(streamError));
      const missing = [...answered.keys()].filter((u) => !arrived.has(u)).length;
      const got = [...answered].filter(([u]) => arrived.has(u));
      const lags = got.map(([u, t]) => Math.max(0, arrived.get(u)! - t)).sort((a, b) => a - b);
      let lastArrival = 0;
      for (const [u] of got) lastArrival = Math.max(lastArrival, arrived.get(u)!);
      latency.sort((a, b) => a - b);
      return {
        events: answered.size,
        lags,
        latency,
        lost: failed + missing,
        drainMs: Math.max(0, lastArrival - lastAnswer),
        achievedRate: (answered.size * 1000) / Math.max(1, lastAnswer - t0),
      };
    },
    async close() {
      abort.abort();
      await stream;
      streamSession.abort();
    },
  };
}
