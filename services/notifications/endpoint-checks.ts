/**
 * Receiver checks (public POST /v1/sandbox/endpoint-checks and GET
 * /v1/sandbox/endpoint-checks/{id}; docs/partners/sandbox.md "Checking your
 * receiver"): test deliveries sent to a sandbox workspace's active endpoint, signed as
 * real ones, some correct and some a receiver keeping the contract's rules must refuse,
 * and how the receiver answered each. A receiver that answers 200 to everything looks
 * perfect to every other sandbox tool; here it fails, with the checks named.
 *
 * Every body is a test `booking.confirmed` built as test events are
 * (test-events.ts `testConfirmationBody`: `"test": true`, a `TEST-BK` booking
 * reference), so nothing a check sends can be mistaken for a real booking. The checks run one after another, each POST through the same egress guard
 * as deliveries (webhook-poster.ts), each with a 5 s deadline (a receiver must answer
 * within it), and the run's row is updated after each one so a reader sees it
 * progress. The names are stable (partners script against them):
 *
 *   valid_delivery_accepted     a correctly signed delivery → 2xx
 *   duplicate_accepted          the same event_id again, signed afresh → 2xx
 *   wrong_signature_refused     a signature under another secret → not 2xx
 *   stale_timestamp_refused     correctly signed over a timestamp 6 minutes old → not 2xx
 *   altered_body_refused        the body changed after signing → not 2xx
 *   previous_secret_accepted    (only while a rotation overlap is open) valid only under
 *                               X-Signature-Previous → 2xx
 *
 * "Refused" is any HTTP answer but a 2xx; no answer at all fails every check. A run
 * starts at most once a minute per workspace (RESOURCE_EXHAUSTED with the seconds to
 * wait), which also keeps runs from overlapping: one takes at most 30 s. A run whose
 * process stopped part-way reads as failed once its deadline passed. Runs are kept 30
 * days.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { EndpointCheckRunSchema, type EndpointCheckRun } from '../../gen/psync/notifications/v1/notifications_pb';
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import { BatchPruner } from '../kit/work';
import { isUuid } from '../kit/base';
import { endpointCheckNotFound, endpointChecksLimited, endpointNotActive } from './errors';
import { sign, signatureHeaders, type SigningKeys } from './signature';
import { TEST_BOOKING, testConfirmationBody } from './test-events';
import type { WebhookPoster } from './webhook-poster';

/** A receiver answers each check within this. */
export const CHECK_TIMEOUT_MS = 5000;
/** Least time between two runs' starts in one workspace. */
export const RUN_INTERVAL_SECONDS = 60;
/** A run still `running` this long after its start was interrupted. */
const RUN_DEADLINE_SECONDS = 45;
/** How long runs are kept. */
export const RUN_RETENTION_DAYS = 30;
/** How old the stale timestamp is: past the five minutes receivers accept. */
const STALE_SECONDS = 6 * 60;

/** One check as stored and answered. */
export interface CheckResult {
  name: string;
  expectation: string;
  observed?: string;
  passed?: boolean;
}

/** How the check's request differs from a real delivery. */
type Shape = 'valid' | 'duplicate' | 'wrong_signature' | 'stale' | 'altered' | 'previous_only';

interface CheckSpec {
  name: string;
  expectation: string;
  shape: Shape;
  accept: boolean;
}

const CHECKS: readonly CheckSpec[] = [
  { name: 'valid_delivery_accepted', expectation: `a correctly signed delivery is accepted: 2xx within ${CHECK_TIMEOUT_MS / 1000} s`, shape: 'valid', accept: true },
  { name: 'duplicate_accepted', expectation: 'the same event_id delivered again is accepted (2xx): deduplicate, never fail a redelivery', shape: 'duplicate', accept: true },
  { name: 'wrong_signature_refused', expectation: 'a delivery whose X-Signature does not verify is refused (not 2xx)', shape: 'wrong_signature', accept: false },
  { name: 'stale_timestamp_refused', expectation: 'a correct signature over an X-Signature-Timestamp older than five minutes is refused (not 2xx)', shape: 'stale', accept: false },
  { name: 'altered_body_refused', expectation: 'a body changed after it was signed is refused (not 2xx): verify over the raw body', shape: 'altered', accept: false },
  {
    name: 'previous_secret_accepted',
    expectation: 'while a rotation overlap is open, a delivery valid only under X-Signature-Previous is accepted (2xx)',
    shape: 'previous_only',
    accept: true,
  },
];

/** The checks of a run: the rotation check only while an overlap is open. */
export function checksFor(keys: SigningKeys): CheckSpec[] {
  return CHECKS.filter((c) => c.shape !== 'previous_only' || keys.previous !== undefined);
}

/**
 * The body and headers one check sends. `valid` is the run's first body, which the
 * duplicate sends again byte for byte (as a redelivery does); the others get a body of
 * their own (a fresh event_id), so a receiver's deduplication cannot answer for them.
 */
export function checkRequest(shape: Shape, keys: SigningKeys, valid: string, fresh: () => string, now: Date = new Date()): { body: string; headers: Record<string, string> } {
  const body = shape === 'valid' || shape === 'duplicate' ? valid : fresh();
  const other = randomBytes(32).toString('base64url');
  switch (shape) {
    case 'valid':
    case 'duplicate':
      return { body, headers: signatureHeaders(keys, body, now) };
    case 'wrong_signature':
      return { body, headers: signatureHeaders({ current: other, ...(keys.previous === undefined ? {} : { previous: other }) }, body, now) };
    case 'stale':
      return { body, headers: signatureHeaders(keys, body, new Date(now.getTime() - STALE_SECONDS * 1000)) };
    case 'altered': {
      const headers = signatureHeaders(keys, body, now);
      return { body: body.replace(`"party_size":${TEST_BOOKING.partySize}`, `"party_size":${TEST_BOOKING.partySize + 1}`), headers };
    }
    case 'previous_only': {
      const timestamp = Math.floor(now.getTime() / 1000);
      return {
        body,
        headers: { 'X-Signature': sign(other, timestamp, body), 'X-Signature-Timestamp': String(timestamp), 'X-Signature-Previous': sign(keys.previous!, timestamp, body) },
      };
    }
  }
}

/** What the run's stored row answers. */
interface RunRow {
  id: string;
  url: string;
  status: 'running' | 'passed' | 'failed';
  checks: CheckResult[];
  started_at: Date;
  finished_at: Date | null;
  interrupted: boolean;
}

function runMessage(r: RunRow): EndpointCheckRun {
  // A run whose process stopped reads as failed, its remaining checks not run.
  const checks = r.interrupted ? r.checks.map((c) => (c.passed === undefined ? { ...c, observed: 'not run: the run was interrupted', passed: false } : c)) : r.checks;
  return create(EndpointCheckRunSchema, {
    id: r.id,
    url: r.url,
    status: r.interrupted ? 'failed' : r.status,
    checks,
    startedAt: timestampFromDate(r.started_at),
    ...(r.finished_at ? { finishedAt: timestampFromDate(r.finished_at) } : {}),
  });
}

export interface EndpointChecksDeps {
  sql: Sql;
  log: Logger;
  poster: WebhookPoster;
  /** The endpoint's URL and signing keys when it is active (subscribed to anything), else undefined. */
  activeEndpoint(workspaceId: string): Promise<{ url: string; keys: SigningKeys } | undefined>;
}

/** Starts and reads runs; runs in flight are awaited by stop(). */
export class EndpointChecks {
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: EndpointChecksDeps) {}

  /** Starts a run (answered at once, `running`) or throws as the .proto says. */
  async start(workspaceId: string): Promise<EndpointCheckRun> {
    const endpoint = await this.deps.activeEndpoint(workspaceId);
    if (!endpoint) throw endpointNotActive('receiver checks need the workspace endpoint to be active; register it and answer its challenge first');
    const specs = checksFor(endpoint.keys);
    const checks: CheckResult[] = specs.map((c) => ({ name: c.name, expectation: c.expectation }));
    const id = randomUUID();
    const started = await this.deps.sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`psync.notifications.endpoint-check:${workspaceId}`}, 0))`;
      const [last] = await tx<{ wait: number | null }[]>`
        select ceil(extract(epoch from (max(started_at) + make_interval(secs => ${RUN_INTERVAL_SECONDS}) - now())))::int as wait
        from notifications.endpoint_checks where workspace_id = ${workspaceId}`;
      const wait = last?.wait ?? 0;
      if (wait > 0) return { wait };
      const [row] = await tx<RunRow[]>`
        insert into notifications.endpoint_checks (id, workspace_id, url, status, checks, deadline)
        values (${id}, ${workspaceId}, ${endpoint.url}, 'running', ${tx.json(checks as never)}, now() + make_interval(secs => ${RUN_DEADLINE_SECONDS}))
        returning id, url, status, checks, started_at, finished_at, false as interrupted`;
      return { row: row! };
    });
    if ('wait' in started) throw endpointChecksLimited(RUN_INTERVAL_SECONDS, started.wait!);
    const run = this.execute(id, workspaceId, endpoint, specs, checks).catch((err: unknown) =>
      this.deps.log.error({ err, workspace_id: workspaceId, run_id: id }, 'webhooks: receiver check run failed'),
    );
    this.inFlight.add(run);
    void run.finally(() => this.inFlight.delete(run));
    return runMessage(started.row);
  }

  /** One run of the workspace; unknown, malformed and another workspace's ids alike are NOT_FOUND. */
  async get(workspaceId: string, id: string): Promise<EndpointCheckRun> {
    const [row] = isUuid(id)
      ? await this.deps.sql<RunRow[]>`
          select id, url, status, checks, started_at, finished_at, (status = 'running' and deadline < now()) as interrupted
          from notifications.endpoint_checks where id = ${id} and workspace_id = ${workspaceId}`
      : [];
    if (!row) throw endpointCheckNotFound();
    return runMessage(row);
  }

  /** Waits for the runs in flight (shutdown). */
  async stop(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private async execute(id: string, workspaceId: string, endpoint: { url: string; keys: SigningKeys }, specs: CheckSpec[], checks: CheckResult[]): Promise<void> {
    const fresh = () => testConfirmationBody(workspaceId);
    const valid = fresh();
    for (const [i, spec] of specs.entries()) {
      const { body, headers } = checkRequest(spec.shape, endpoint.keys, valid, fresh);
      const startedAt = Date.now();
      const res = await this.deps.poster.post(
        endpoint.url,
        body,
        { ...headers, 'Content-Type': 'application/json', 'User-Agent': 'PartnerSync-Webhooks/1' },
        {
          timeoutMs: CHECK_TIMEOUT_MS,
          maxResponseBytes: 0,
        },
      );
      const ms = Date.now() - startedAt;
      const answered = 'status' in res;
      const ok = answered && res.status >= 200 && res.status < 300;
      checks[i] = { ...checks[i]!, observed: answered ? `HTTP ${res.status} in ${ms} ms` : `no answer: ${res.error}`, passed: answered && ok === spec.accept };
      await this.deps.sql`update notifications.endpoint_checks set checks = ${this.deps.sql.json(checks as never)} where id = ${id}`;
    }
    const status = checks.every((c) => c.passed) ? 'passed' : 'failed';
    await this.deps.sql`update notifications.endpoint_checks set status = ${status}, finished_at = now() where id = ${id}`;
    this.deps.log.info({ workspace_id: workspaceId, run_id: id, status, failed: checks.filter((c) => !c.passed).map((c) => c.name) }, 'webhooks: receiver check run finished');
  }
}

/** Deletes up to `batch` runs older than `retentionDays`; returns how many. */
export async function pruneEndpointChecksOnce(sql: Sql, retentionDays = RUN_RETENTION_DAYS, batch = 1000): Promise<number> {
  const [row] = await sql<{ deleted: number }[]>`
    with gone as (
      delete from notifications.endpoint_checks
      where id in (select id from notifications.endpoint_checks where started_at < now() - make_interval(days => ${retentionDays}) limit ${batch})
      returning 1
    )
    select count(*)::int as deleted from gone`;
  return row!.deleted;
}

/** The runs' housekeeping: prunes now and hourly until stop(). */
export class EndpointCheckPruner extends BatchPruner {
  constructor(sql: Sql, log: Logger) {
    super({
      pruneOnce: () => pruneEndpointChecksOnce(sql),
      batch: 1000,
      everyMs: 60 * 60 * 1000,
      name: 'endpoint-check-pruner',
      onPruned: (deleted) => log.info({ deleted, retention_days: RUN_RETENTION_DAYS }, 'webhooks: receiver check runs past the retention pruned'),
      onError: (err) => log.warn({ err }, 'webhooks: receiver check pruning failed; retried later'),
    });
  }
}
