/**
 * The claim: which due deliveries this process attempts next, taken fairly across
 * endpoints and leased to it, in one statement on the asynchronous-commit pool (a claim
 * lost in a crash only means its leases run out and the deliveries are claimed again).
 * The dispatcher (dispatcher.ts) calls it when it has free slots and launches an
 * attempt per row.
 */
import type { Sql } from '../kit/db';
import { LeaseQueue } from '../kit/work';
import type { EventKind } from './envelope';
import { LEASE_MS, PER_ENDPOINT_CONCURRENCY } from './delivery-limits';

export interface ClaimedRow {
  id: string;
  workspace_id: string;
  event_id: string;
  event_type: EventKind;
  body: string;
  attempts: number;
  url: string | null;
  status: string | null;
  events: string[] | null;
  secret_ciphertext: Buffer | null;
  previous_secret_ciphertext: Buffer | null;
  previous_valid: boolean | null;
  traceparent: string | null;
  /** 'probe': this attempt is the half-open breaker's one probe. */
  mode: 'normal' | 'probe';
  slow_lane: boolean;
  /** The endpoint had failures, a hold or a breaker not closed when claimed: a 2xx must reset it. */
  health_dirty: boolean;
  /** The claim took as many of the endpoint's due deliveries as its room allowed (more may be due). */
  room_used: boolean;
  /** Other deliveries of its booking are pending: they wait for this one (per-booking order). */
  behind: boolean;
}

/** The deliveries as a lease queue (kit/work): claimed per endpoint (workspace), leased by `lease_owner`. */
export const deliveryQueue = new LeaseQueue({
  table: 'notifications.deliveries',
  key: ['id'],
  group: 'workspace_id',
  owner: 'lease_owner',
  due: 'next_attempt_at',
});

/**
 * A delivery an attempt may start on now: free (pending, not leased or its lease ran
 * out) and due. The claim takes its candidates by it and the idle poll's check (anyDue)
 * asks it; `d` is the deliveries table's alias in the statement.
 */
export function startableNow(sql: Sql, d: string) {
  return sql`${deliveryQueue.free(sql, d)} and ${sql(d)}.next_attempt_at <= now()`;
}

export interface ClaimArgs {
  /** Attempts in flight in this process, per endpoint (workspace id → count). */
  busy: [string, number][];
  /** Endpoints whose recent attempts in this process were slow: their deliveries go to the slow lane. */
  slowEndpoints: string[];
  /** Free slots of each lane. */
  freeFast: number;
  freeSlow: number;
  /** This claim's lease owner. */
  token: string;
}

/**
 * Claims and leases up to the lanes' free slots of due deliveries, in one statement of
 * the lease queue (kit/work: the endpoints with pending deliveries `ws`, this process's
 * in-flight counts `used` and slow endpoints `slow`, then lock and lease), with the
 * dispatcher's fairness rules:
 * 1. eps: what each endpoint may have now: held (Retry-After, breaker open and not yet
 *    due) nothing; a due open breaker, or a half-open one whose probe was lost, one
 *    probe; otherwise PER_ENDPOINT_CONCURRENCY (1 while failing) less what this process
 *    already has in flight there; and its lane;
 * 2. cand: each endpoint's first due deliveries in order, skipping leased ones and
 *    ones with an earlier delivery of the same booking still pending;
 * 3. chosen: round-robin, every endpoint's first before anyone's second, up to the
 *    lane's free slots;
 * 4. probes: the breaker goes half-open under this claim's token (one replica wins);
 * then the normal deliveries chosen and those of the endpoints whose probe this claim
 * won are leased.
 */
export function claimDeliveries(sql: Sql, args: ClaimArgs): Promise<ClaimedRow[]> {
  return deliveryQueue.claim<ClaimedRow>(sql, {
    token: args.token,
    leaseSeconds: LEASE_MS / 1000,
    busy: args.busy,
    slow: args.slowEndpoints,
    rules: sql`eps as (
      select ws.workspace_id,
             case
               when e.status is distinct from 'active' or h.workspace_id is null then 'normal'
               when h.breaker = 'open' then
                 case when (h.not_before is null or h.not_before <= now()) and u.n is null then 'probe' else 'held' end
               when h.breaker = 'half_open' then
                 case when h.probe_until < now() and u.n is null then 'probe' else 'held' end
               when h.not_before > now() then 'held'
               else 'normal'
             end as mode,
             coalesce(e.status = 'active' and (h.consecutive_failures > 0 or h.breaker <> 'closed' or h.not_before > now()), false)
               or s.workspace_id is not null as slow_lane,
             coalesce(e.status = 'active' and (h.consecutive_failures > 0 or h.breaker <> 'closed' or h.not_before is not null), false) as health_dirty,
             case when e.status = 'active' and h.consecutive_failures > 0 then 1 else ${PER_ENDPOINT_CONCURRENCY} end - coalesce(u.n, 0) as room
      from ws
      left join notifications.endpoints e on e.workspace_id = ws.workspace_id
      left join notifications.endpoint_health h on h.workspace_id = ws.workspace_id
      left join used u on u.workspace_id = ws.workspace_id
      left join slow s on s.workspace_id = ws.workspace_id
      where ws.workspace_id is not null
    ), cand as (
      select eps.workspace_id, eps.mode, eps.slow_lane, eps.health_dirty, x.id, x.next_attempt_at,
             row_number() over (partition by eps.workspace_id order by x.next_attempt_at, x.id) as turn,
             count(*) over (partition by eps.workspace_id) >= eps.room as room_used
      from eps cross join lateral (
        select d.id, d.next_attempt_at
        from notifications.deliveries d
        where d.workspace_id = eps.workspace_id and ${startableNow(sql, 'd')}
          and (d.booking_reference is null or not exists (
            select 1 from notifications.deliveries p
            where p.workspace_id = d.workspace_id and p.booking_reference = d.booking_reference
              and p.state = 'pending' and (p.occurred_at, p.id) < (d.occurred_at, d.id)))
        order by d.next_attempt_at, d.id
        limit case when eps.mode = 'probe' then 1 else greatest(eps.room, 0) end
      ) x
      where eps.mode = 'probe' or (eps.mode = 'normal' and eps.room > 0)
    ), lane as (
      select cand.*, row_number() over (partition by cand.slow_lane order by cand.turn, cand.next_attempt_at, cand.id) as pos
      from cand
    ), chosen as (
      select id, workspace_id, mode, slow_lane, health_dirty, room_used from lane
      where pos <= case when slow_lane then ${args.freeSlow}::int else ${args.freeFast}::int end
    ), probes as (
      update notifications.endpoint_health h
      set breaker = 'half_open', probe_owner = ${args.token}, probe_until = now() + ${LEASE_MS / 1000}::float8 * interval '1 second', updated_at = now()
      where h.workspace_id in (select workspace_id from chosen where mode = 'probe')
        and ((h.breaker = 'open' and (h.not_before is null or h.not_before <= now())) or (h.breaker = 'half_open' and h.probe_until < now()))
      returning h.workspace_id
    )`,
    take: sql`select id from chosen where mode = 'normal' or workspace_id in (select workspace_id from probes)`,
    returning: sql`t.id, t.workspace_id, t.event_id, t.event_type, t.body, t.attempts, t.traceparent, t.booking_reference`,
    result: sql`
      select l.id, l.workspace_id, l.event_id, l.event_type, l.body, l.attempts, l.traceparent,
             c.mode, c.slow_lane, c.health_dirty, c.room_used,
             (l.booking_reference is not null and exists (
               select 1 from notifications.deliveries p
               where p.workspace_id = l.workspace_id and p.booking_reference = l.booking_reference
                 and p.state = 'pending' and p.id <> l.id)) as behind,
             e.url, e.status, e.events, e.secret_ciphertext, e.previous_secret_ciphertext,
             (e.previous_valid_until > now()) as previous_valid
      from leased l
      join chosen c on c.id = l.id
      left join notifications.endpoints e on e.workspace_id = l.workspace_id
      order by l.id`,
  });
}
