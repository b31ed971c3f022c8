/**
 * The calendar's marketplace writes below the service, on a real PostgreSQL
 * (docs/calendar.md "One style for writes"):
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:calendar-writes
 *
 * On a scratch database of DATABASE_URL's server (created, migrated, dropped), the domain
 * functions of services/calendar/ run as the service runs them (the catalog answered
 * in-process), BENCH_CONNECTIONS (8) workers at once, each on listings of its own, for
 * BENCH_SECONDS (10) per workload:
 *   - hold: PlaceHold (with an idempotency key), then ReleaseHold;
 *   - booking: PlaceHold, ConfirmBooking of the hold, CancelBooking by the guest (both
 *     with keys);
 *   - block: PutBlock, then DeleteBlock.
 * Reported per RPC: calls per second, p50 / p99 (ms); per workload: the CPU of this
 * database's PostgreSQL backends per cycle (from /proc: PostgreSQL must run on this
 * machine).
 */
import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { loadavg } from 'node:os';
import {
  CancelBookingRequestSchema,
  ConfirmBookingRequestSchema,
  DeleteBlockRequestSchema,
  PlaceHoldRequestSchema,
  PutBlockRequestSchema,
  ReleaseHoldRequestSchema,
} from '../gen/psync/calendar/v1/calendar_pb';
import { CancellationInitiator } from '../gen/psync/calendar/v1/events_pb';
import { calendarModule } from '../services/calendar/module';
import { placeHold, releaseHold } from '../services/calendar/holds';
import { cancelBooking, confirmBooking } from '../services/calendar/bookings';
import { deleteBlock, putBlock } from '../services/calendar/blocks';
import type { CalendarDeps } from '../services/calendar/calendar-deps';
import type { ListingDirectory, ListingInfo } from '../services/calendar/listings';
import { createSql, type Sql } from '../services/kit/db';
import { createLogger } from '../services/kit/base';
import { runMigrations } from '../services/kit/db';
import { KIT_MIGRATIONS } from '../services/kit/db';
import { createBenchDatabase } from './support/bench-system';
import { cpuMsOf } from './support/proc-cpu';
import { benchName } from './support/results';

const SECONDS = Number(process.env.BENCH_SECONDS ?? '10');
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? '8');
const LISTINGS_PER_WORKER = 4;
const WS = '6f1c2a8e-0000-4000-8000-0000000000c1';
const CALLER = { role: 'marketplace', id: 'marketplace' } as const;

type Workload = 'hold' | 'booking' | 'block';

const day = (n: number) => new Date(Date.UTC(2030, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

function depsOf(sql: Sql): CalendarDeps {
  const info = (listingId: string): ListingInfo => ({
    listingId,
    workspaceId: WS,
    environment: 'sandbox',
    providerId: `p-${listingId}`,
    checkInTime: '15:00',
    checkOutTime: '11:00',
  });
  const listings = { resolve: async (id: string) => info(id), assertOwned: async () => undefined } as unknown as ListingDirectory;
  return { sql, log: createLogger({ name: 'bench', level: 'warn' }), listings, holdTtlSeconds: 900, eventsCommitted: () => undefined };
}

/** One cycle of `w` by worker `c` (its i-th), timing each call into `lat`. */
async function cycle(deps: CalendarDeps, w: Workload, c: number, i: number, lat: Map<string, number[]>): Promise<void> {
  const timed = async <T>(rpc: string, f: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const out = await f();
    const xs = lat.get(rpc) ?? [];
    xs.push(performance.now() - t0);
    lat.set(rpc, xs);
    return out;
  };
  const listingId = `lst_${c}_${i % LISTINGS_PER_WORKER}`;
  const checkIn = day(i % 700);
  const checkOut = day((i % 700) + 2);
  if (w === 'block') {
    const uid = `blk-${c}-${i}`;
    await timed('PutBlock', () =>
      putBlock(deps, create(PutBlockRequestSchema, { workspaceId: WS, externalUid: uid, target: { case: 'listingId', value: listingId }, checkIn, checkOut })),
    );
    await timed('DeleteBlock', () => deleteBlock(deps, create(DeleteBlockRequestSchema, { workspaceId: WS, externalUid: uid })));
    return;
  }
  const placed = await timed('PlaceHold', () => placeHold(deps, create(PlaceHoldRequestSchema, { listingId, checkIn, checkOut, idempotencyKey: randomUUID() }), CALLER));
  const holdId = placed.hold!.holdId!;
  if (w === 'hold') {
    await timed('ReleaseHold', () => releaseHold(deps, create(ReleaseHoldRequestSchema, { holdId })));
    return;
  }
  const booked = await timed('ConfirmBooking', () =>
    confirmBooking(
      deps,
      create(ConfirmBookingRequestSchema, {
        holdId,
        guestId: `g-${c}`,
        guestName: 'Bench Guest',
        partySize: 2,
        amountPaid: { value: '100.00', currency: 'EUR' },
        idempotencyKey: randomUUID(),
      }),
      CALLER,
    ),
  );
  await timed('CancelBooking', () =>
    cancelBooking(
      deps,
      create(CancelBookingRequestSchema, { bookingReference: booked.booking!.bookingReference!, initiatedBy: CancellationInitiator.GUEST, idempotencyKey: randomUUID() }),
      CALLER,
    ),
  );
}

async function backendsCpu(sql: Sql): Promise<Map<number, number>> {
  const rows = await sql<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()`;
  return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid)]));
}

async function run(deps: CalendarDeps, w: Workload, seconds: number, start: number): Promise<{ cycles: number; lat: Map<string, number[]>; pgMs: number }> {
  const lat = new Map<string, number[]>();
  const before = await backendsCpu(deps.sql);
  const end = Date.now() + seconds * 1000;
  let cycles = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, c) => {
      for (let i = start; Date.now() < end; i++) {
        await cycle(deps, w, c, i, lat);
        cycles++;
      }
    }),
  );
  const after = await backendsCpu(deps.sql);
  let used = 0;
  for (const [pid, ms] of after) used += ms - (before.get(pid) ?? ms);
  return { cycles, lat, pgMs: used };
}

async function main(): Promise<void> {
  benchName('calendar-writes');
  const db = await createBenchDatabase('psync_bench_writes');
  const sql = createSql(db.url, { max: CONNECTIONS });
  try {
    await runMigrations(sql, { schema: 'calendar', sources: [KIT_MIGRATIONS, calendarModule.migrations] });
    const deps = depsOf(sql);
    const out: string[] = [
      `Command: DATABASE_URL=… npm run bench:calendar-writes (BENCH_SECONDS=${SECONDS}, BENCH_CONNECTIONS=${CONNECTIONS}); load average ${loadavg()[0]!.toFixed(2)} at the start`,
    ];
    out.push('', '| workload | RPC | calls/s | p50 ms | p99 ms | PostgreSQL CPU per cycle, ms |', '|---|---|---|---|---|---|');
    let start = 0;
    for (const w of ['hold', 'booking', 'block'] as const) {
      await run(deps, w, 2, start); // warm-up: plans cached, pages in memory
      start += 100_000;
      const r = await run(deps, w, SECONDS, start);
      start += 100_000;
      for (const [rpc, xs] of r.lat) {
        xs.sort((a, b) => a - b);
        const p = (q: number) => xs[Math.floor(xs.length * q)]!.toFixed(1);
        out.push(`| ${w} | ${rpc} | ${(xs.length / SECONDS).toFixed(0)} | ${p(0.5)} | ${p(0.99)} | ${(r.pgMs / r.cycles).toFixed(2)} |`);
      }
    }
    out.push('', `load average ${loadavg()[0]!.toFixed(2)} at the end (the machine is shared)`);
    console.log(out.join('\n'));
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
