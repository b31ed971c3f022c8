/**
 * Sends the request log's records (docs/operations.md "Request log") to identity in
 * batches, off the request path: a partner's answer is never delayed or failed because
 * the log is slow or down.
 *
 * - `record()` only appends to a bounded in-memory queue and returns; when the queue is
 *   full the record is dropped and counted (psync_request_log_dropped_total{reason=
 *   "queue_full"}).
 * - One batch is in flight at a time: sent when `batchSize` records wait, or
 *   `flushMs` after the first one arrived. A batch that fails is dropped and counted
 *   (reason "send_failed") with one sampled warning; it is not retried, so a down
 *   identity cannot grow the queue beyond its bound.
 * - Identity checks each record of a batch on its own: records it refuses (one that
 *   breaks its rules or that the database would not take) are dropped and counted alone
 *   (reason "refused", from the answer's `refused`), the rest of the batch is stored.
 *   The records are made storable before they are queued (request-log-sanitiser.ts),
 *   so a refusal means the gateway and identity disagree: a bug worth the warning.
 * - `close()` sends what is queued (bounded by the caller's grace period) on shutdown.
 * - Batches are sent in the context the recorder was made in (start-up), not in that of
 *   the request whose record filled the batch: RecordRequests joins no partner request's
 *   trace and carries no partner request's `x-request-id`.
 */
import { AsyncResource } from 'node:async_hooks';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { RecordedRequestSchema } from '../gen/psync/identity/v1/identity_pb';
import { LogSampler } from '../services/kit/base';
import { logEvent, type Logger } from '../services/kit/base';
import { recordRequestLogDropped, type RequestLogDropReason as DropReason } from '../services/kit/telemetry';

export type RequestRecordInit = MessageInitShape<typeof RecordedRequestSchema>;

export interface RequestRecorderOptions {
  /** Sends one batch (IdentityService.RecordRequests); its answer says how many records identity refused. */
  send(batch: RequestRecordInit[]): Promise<{ refused?: number } | void>;
  log: Logger;
  /** Most records waiting; more are dropped. */
  maxQueue?: number;
  /** Most records per call (identity.proto allows 500). */
  batchSize?: number;
  /** Longest wait before a partial batch is sent. */
  flushMs?: number;
}

/** The recorder's defaults: about 10 s of a busy gateway's requests may wait. */
export const RECORDER_DEFAULTS = { maxQueue: 10_000, batchSize: 200, flushMs: 1000 } as const;

export class RequestRecorder {
  private queue: RequestRecordInit[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private readonly maxQueue: number;
  private readonly batchSize: number;
  private readonly flushMs: number;
  private readonly warnings = new LogSampler();
  /** The start-up context the timer and the sends run in. */
  private readonly scope = new AsyncResource('RequestRecorder');
  /** Records dropped since start (also a metric), by reason. */
  readonly dropped: Record<DropReason, number> = { queue_full: 0, send_failed: 0, refused: 0 };

  constructor(private readonly opts: RequestRecorderOptions) {
    this.maxQueue = opts.maxQueue ?? RECORDER_DEFAULTS.maxQueue;
    this.batchSize = opts.batchSize ?? RECORDER_DEFAULTS.batchSize;
    this.flushMs = opts.flushMs ?? RECORDER_DEFAULTS.flushMs;
  }

  /** Records waiting to be sent. */
  get queued(): number {
    return this.queue.length;
  }

  /** Queues one record; never throws, never waits. */
  record(rec: RequestRecordInit): void {
    if (this.queue.length >= this.maxQueue) {
      this.drop('queue_full', 1);
      return;
    }
    this.queue.push(rec);
    this.schedule();
  }

  /** Sends everything queued, batch after batch; resolves when done (failures are dropped and counted). */
  async flush(): Promise<void> {
    this.clearTimer();
    while (this.inFlight || this.queue.length > 0) {
      if (this.inFlight) await this.inFlight;
      else this.sendNext();
    }
  }

  /** On shutdown: sends what is queued, waiting at most `graceMs`. */
  async close(graceMs: number): Promise<void> {
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([this.flush(), new Promise<void>((resolve) => (timeout = setTimeout(resolve, graceMs)))]);
    clearTimeout(timeout);
    this.clearTimer();
  }

  private schedule(): void {
    if (this.inFlight) return; // the batch in flight schedules the next when it ends
    if (this.queue.length >= this.batchSize) {
      this.clearTimer();
      this.sendNext();
    } else if (!this.timer) {
      this.timer = this.scope.runInAsyncScope(() =>
        setTimeout(() => {
          this.timer = undefined;
          if (!this.inFlight) this.sendNext();
        }, this.flushMs),
      );
      this.timer.unref();
    }
  }

  private sendNext(): void {
    const batch = this.queue.splice(0, this.batchSize);
    if (batch.length === 0) return;
    this.inFlight = this.scope
      .runInAsyncScope(() => this.sendBatch(batch))
      .finally(() => {
        this.inFlight = undefined;
        if (this.queue.length > 0) this.schedule();
      });
  }

  private async sendBatch(batch: RequestRecordInit[]): Promise<void> {
    try {
      const answer = await this.opts.send(batch);
      const refused = answer?.refused ?? 0;
      if (refused > 0) {
        this.drop('refused', refused);
        this.warnings.sample('refused', (notLogged) =>
          this.opts.log.warn(
            { event: logEvent('request_log.batch.refused'), refused, records: batch.length, refusals_not_logged: notLogged },
            'request log: identity refused records of a batch (the rest is stored); dropped',
          ),
        );
      }
    } catch (err) {
      this.drop('send_failed', batch.length);
      this.warnings.sample('send_failed', (notLogged) =>
        this.opts.log.warn(
          { event: logEvent('request_log.batch.failed'), err, records: batch.length, failures_not_logged: notLogged },
          'request log: a batch could not be recorded; dropped',
        ),
      );
    }
  }

  private drop(reason: DropReason, n: number): void {
    this.dropped[reason] += n;
    recordRequestLogDropped(reason, n);
    if (reason === 'queue_full') {
      this.warnings.sample('queue_full', (notLogged) =>
        this.opts.log.warn({ event: logEvent('request_log.queue_full'), dropped_not_logged: notLogged }, 'request log: recorder queue full; records dropped'),
      );
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
