/**
 * The durable pull consumers of the NATS bus (bus-nats.ts): their creation and their
 * upgrade in place, one per `subscribe`.
 *
 * - Explicit ack, unlimited redelivery, as many replicas as the stream.
 * - Created idempotently: several replicas may start at the same time and race to
 *   create them; a consumer whose settings changed is updated and keeps its position.
 * - One subject: a server-side filter on any server; several: server-side filters on
 *   nats-server 2.10+, otherwise none (the subscription drops what does not match).
 */
import { nanos, type NatsConnection } from '@nats-io/nats-core';
import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamError, type ConsumerConfig, type JetStreamManager } from '@nats-io/jetstream';
import { logEvent, type Logger } from '../base';
import { apiErrorCode } from './nats-stream';

/** JetStream API error codes we react to (nats-server `server/errors.json`) that nats.js does not name. */
const JS_CONSUMER_NAME_IN_USE = 10013;
const JS_CONSUMER_EXISTS = 10148;

const ACK_WAIT_MS = 30_000;

/** nats-server version as [major, minor]; filter_subjects (several filters) needs 2.10. */
export function serverSupportsMultipleFilters(nc: NatsConnection): boolean {
  const m = /^(\d+)\.(\d+)/.exec(nc.info?.version ?? '');
  if (!m) return false;
  const major = Number(m[1]);
  const minor = Number(m[2]);
  return major > 2 || (major === 2 && minor >= 10);
}

/**
 * Whether `err` says the durable consumer is gone: not found (the API's 10014, also what
 * a consume loop's check after missed heartbeats reports) or deleted under a pull in
 * flight (the server's `409 Consumer Deleted` status, which nats.js gives as a
 * JetStreamError carrying only the status's description).
 */
export function isConsumerGone(err: unknown): boolean {
  return apiErrorCode(err) === JetStreamApiCodes.ConsumerNotFound || (err instanceof JetStreamError && /^consumer deleted$/i.test(err.message));
}

/** Where the bus's consumers live: the stream, its subject prefix and replica count. */
export interface ConsumerPlace {
  jsm: JetStreamManager;
  /** The stream's name. */
  stream: string;
  /** The subject prefix; subscriptions name subjects without it. */
  prefix: string;
  /** The stream's replica count, which durable consumers take. */
  replicas: number;
  /** Whether the server filters on several subjects (serverSupportsMultipleFilters). */
  multipleFilters: boolean;
  log: Logger;
}

/** The configuration of durable consumer `durable` over `subjects`: what ensureConsumer creates and keeps. */
export function consumerConfig(place: ConsumerPlace, durable: string, subjects: string[]) {
  const full = subjects.map((s) => `${place.prefix}.${s}`);
  // One subject: filter_subject (any server). Several: filter_subjects on 2.10+,
  // otherwise no server filter and the loop drops what does not match.
  const filter: { filter_subject?: string; filter_subjects?: string[] } = full.length === 1 ? { filter_subject: full[0] } : place.multipleFilters ? { filter_subjects: full } : {};
  return {
    durable_name: durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ACK_WAIT_MS),
    max_deliver: -1,
    max_ack_pending: 1000,
    // As many copies as the stream: an R1 consumer on an R3 stream would lose its
    // position with its one node.
    num_replicas: place.replicas,
    ...filter,
  } satisfies Partial<ConsumerConfig>;
}

/**
 * Creates durable consumer `durable` again after it was lost, starting at stream
 * sequence `fromSeq` (everything before it was acknowledged); from the stream's first
 * event when the position is unknown or belongs to an older stream. Answers false when another process (a replica)
 * created it first: that one is used as it is.
 */
export async function recreateConsumer(place: ConsumerPlace, durable: string, subjects: string[], fromSeq: number | undefined): Promise<boolean> {
  // A position past the stream's end belongs to a stream that was deleted and created
  // again (its sequences start over): read the new one from its start.
  const resumable = fromSeq !== undefined && fromSeq > 1 && fromSeq <= (await place.jsm.streams.info(place.stream)).state.last_seq + 1;
  const start = resumable ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq } : { deliver_policy: DeliverPolicy.All };
  try {
    await place.jsm.consumers.add(place.stream, { ...consumerConfig(place, durable, subjects), ...start });
    return true;
  } catch (err) {
    const code = apiErrorCode(err);
    if (code === JS_CONSUMER_EXISTS || code === JS_CONSUMER_NAME_IN_USE) return false;
    throw err;
  }
}

/** Ensures the durable consumer `durable` over `subjects` exists with our configuration; safe when replicas race. */
export async function ensureConsumer(place: ConsumerPlace, durable: string, subjects: string[]): Promise<void> {
  const { jsm, stream, log } = place;
  const wanted = consumerConfig(place, durable, subjects);
  for (let attempt = 0; attempt < 5; attempt++) {
    let info;
    try {
      info = await jsm.consumers.info(stream, durable);
    } catch (err) {
      if (apiErrorCode(err) !== JetStreamApiCodes.ConsumerNotFound) throw err;
      try {
        await jsm.consumers.add(stream, wanted);
        log.info({ stream, durable, subjects }, 'bus: durable consumer created');
        return;
      } catch (addErr) {
        const code = apiErrorCode(addErr);
        if (code === JS_CONSUMER_EXISTS || code === JS_CONSUMER_NAME_IN_USE) continue;
        throw addErr;
      }
    }
    const have = info.config;
    const haveFilters = [...(have.filter_subjects ?? (have.filter_subject ? [have.filter_subject] : []))].sort();
    const wantFilters = [...(wanted.filter_subjects ?? (wanted.filter_subject ? [wanted.filter_subject] : []))].sort();
    const same =
      JSON.stringify(haveFilters) === JSON.stringify(wantFilters) &&
      have.ack_wait === wanted.ack_wait &&
      (have.max_deliver ?? -1) === wanted.max_deliver &&
      have.ack_policy === wanted.ack_policy &&
      // 0 (an older release's consumer): the stream's count when it was created, 1 then.
      (have.num_replicas || 1) === wanted.num_replicas;
    if (!same) {
      // A changed filter keeps the consumer's position (updating filters needs nats-server 2.10).
      await jsm.consumers.update(stream, durable, {
        ack_wait: wanted.ack_wait,
        max_deliver: wanted.max_deliver,
        num_replicas: wanted.num_replicas,
        ...(wanted.filter_subjects ? { filter_subjects: wanted.filter_subjects, filter_subject: undefined } : {}),
        ...(wanted.filter_subject !== undefined ? { filter_subject: wanted.filter_subject } : {}),
      });
      log.info(
        { event: logEvent('bus.consumer.updated'), stream, durable, subjects, num_replicas: `${have.num_replicas || 1}→${wanted.num_replicas}` },
        'bus: durable consumer updated',
      );
    }
    return;
  }
  throw new Error(`bus: could not create or read consumer ${durable}`);
}
