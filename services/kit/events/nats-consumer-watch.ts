/**
 * What a subscription (nats-subscription.ts) knows of its durable consumer on NATS:
 * whether it exists, and the position to recreate it from if it is lost.
 *
 * A durable consumer can disappear while its subscriber runs: an operator's (or an
 * anonymous client's) `consumer rm`, `main.ts after-restore --force` against a live
 * system, a NATS store lost. nats.js keeps pulling from a missing consumer in silence,
 * so the subscriber checks: the consume loop ends at the server's `409 Consumer
 * Deleted` or at a missed heartbeat whose check finds no consumer, and a periodic read
 * of the consumer's info (CHECK_INTERVAL_MS, also at every metrics scrape) catches the
 * rest. Each successful read records the consumer's acknowledged floor (every event up
 * to that stream sequence acknowledged, by any replica); the consumer is recreated
 * with its own configuration from the next sequence, so nothing unacknowledged is
 * skipped. Events acknowledged after the last read come again: at-least-once, which
 * the handlers absorb (they dedupe on the event id).
 */
import type { ConsumerInfo } from '@nats-io/jetstream';
import { recordBusConsumerRecreated, registerBusConsumer, type BusConsumerState } from '../telemetry';
import { logEvent } from '../base';
import { PeriodicJob } from '../work';
import { isConsumerGone, recreateConsumer, type ConsumerPlace } from './nats-consumer';

/** How often the subscriber reads its consumer's info when nothing else does (a missing consumer is noticed within it). */
export const CHECK_INTERVAL_MS = 5_000;

/**
 * How long after a recreation the next one waits. Right after a deletion nats-server
 * (2.9 seen here) can report the recreated consumer gone again for a few tens of
 * milliseconds while it finishes removing the old one's store; without a pause each
 * report would recreate (and count) it once more.
 */
const SETTLE_MS = 500;

export class ConsumerWatch {
  /** Stream sequence up to which every event was acknowledged, at the last successful read; undefined before the first. */
  private ackFloor: number | undefined;
  /** When this process last recreated the consumer (ms since the epoch). */
  private recreatedAt = 0;
  /** The recreation in progress: the pullers that notice the loss at once all wait for this one. */
  private recreating: Promise<void> | undefined;
  /** The pullers attached (attach), each told when the periodic check finds the consumer gone. */
  private readonly pullers = new Set<() => void>();
  /** The one periodic check and gauge source of the consumer in this process, while pullers are attached. */
  private running: { check: PeriodicJob; unregisterGauges: () => void } | undefined;

  constructor(
    private readonly place: ConsumerPlace,
    private readonly durable: string,
    private readonly subjects: string[],
  ) {}

  /**
   * Attaches a puller: `onLost` is called when the periodic check (every
   * CHECK_INTERVAL_MS, one for all the pullers of this consumer) finds the consumer
   * gone. The first puller starts the check and the consumer's gauges
   * (psync_bus_consumer_pending, _up); the last one to detach stops them. Returns the
   * detach function, which resolves once the check has stopped when it was the last.
   */
  attach(onLost: () => void): () => Promise<void> {
    this.pullers.add(onLost);
    if (!this.running) {
      const check = new PeriodicJob(
        async () => {
          if ((await this.read()).present) return;
          for (const lost of this.pullers) lost();
        },
        CHECK_INTERVAL_MS,
        // NATS unreachable: the consume loops say so; the next check tries again.
        (err) => this.place.log.debug({ err, durable: this.durable }, 'bus: consumer check failed'),
        `bus-${this.durable}-check`,
      );
      check.start(0);
      this.running = { check, unregisterGauges: registerBusConsumer(this.durable, () => this.read()) };
    }
    return async () => {
      this.pullers.delete(onLost);
      const running = this.running;
      if (this.pullers.size > 0 || !running) return;
      this.running = undefined;
      running.unregisterGauges();
      await running.check.stop();
    };
  }

  /**
   * Reads the consumer's info and records its position. `present: false` when NATS says
   * it does not exist; other failures (NATS unreachable) throw.
   */
  async read(): Promise<BusConsumerState> {
    let info: ConsumerInfo;
    try {
      info = await this.place.jsm.consumers.info(this.place.stream, this.durable);
    } catch (err) {
      if (isConsumerGone(err)) return { present: false };
      throw err;
    }
    this.ackFloor = info.ack_floor.stream_seq;
    return { present: true, pending: info.num_pending + info.num_ack_pending };
  }

  /**
   * Creates the lost consumer again from the recorded position; logs and counts it
   * (psync_bus_consumer_recreated_total). Nothing happens when it exists (a stale
   * pull's answer) or another replica recreated it first.
   */
  recreate(noticedBy: string): Promise<void> {
    this.recreating ??= this.recreateOnce(noticedBy).finally(() => (this.recreating = undefined));
    return this.recreating;
  }

  private async recreateOnce(noticedBy: string): Promise<void> {
    const since = Date.now() - this.recreatedAt;
    if (since < SETTLE_MS) await new Promise((r) => setTimeout(r, SETTLE_MS - since));
    // Pulls issued before a deletion can still answer "consumer deleted" after the
    // consumer was recreated (by this process or a replica): one that exists is resumed,
    // not created again (nor counted).
    if ((await this.read()).present) {
      this.place.log.debug({ stream: this.place.stream, durable: this.durable, noticed_by: noticedBy }, 'bus: durable consumer reported missing exists; resuming');
      return;
    }
    const fromSeq = this.ackFloor === undefined ? undefined : this.ackFloor + 1;
    const created = await recreateConsumer(this.place, this.durable, this.subjects, fromSeq);
    const fields = { stream: this.place.stream, durable: this.durable, noticed_by: noticedBy, from_stream_seq: fromSeq ?? 'first' };
    if (!created) {
      this.place.log.info(fields, 'bus: durable consumer was missing; another process recreated it');
      return;
    }
    this.recreatedAt = Date.now();
    recordBusConsumerRecreated(this.durable);
    this.place.log.warn({ event: logEvent('bus.consumer.recreated'), ...fields }, 'bus: durable consumer was missing; recreated from its last acknowledged position');
  }
}
