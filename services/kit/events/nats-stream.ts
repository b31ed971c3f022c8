/**
 * The JetStream stream behind the NATS bus (bus-nats.ts): its creation and its upgrade
 * in place, and the JetStream API errors the bus reacts to.
 *
 * - One stream `<PREFIX>` (prefix upper-cased) over `<prefix>.>`, file storage, a
 *   2-minute duplicate window (the bus publishes with the event id as `msgID`).
 * - Created idempotently: several replicas may start at the same time and race to
 *   create it.
 * - Replicas and limits (NATS_STREAM_*) of an existing stream are brought to the
 *   configuration in place, unless the connection's NATS user may not update it.
 */
import { errors, nanos } from '@nats-io/nats-core';
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { formatDuration } from '../base';
import { logEvent, type Logger } from '../base';

/** JetStream API error codes we react to (nats-server `server/errors.json`) that nats.js does not name. */
const JS_STREAM_NAME_IN_USE = 10058;
/** `replicas > 1 not supported in non-clustered mode`. */
const JS_REPLICAS_NOT_SUPPORTED = 10074;

const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** The JetStream API error code (`err_code`) of `err`, if it is a JetStream API error. */
export function apiErrorCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

/**
 * Replication and retention of the stream (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_AGE,
 * NATS_STREAM_MAX_BYTES). Durable consumers take the stream's replica count.
 */
export interface StreamLimits {
  /** num_replicas: 1 to 5; more than 1 needs a clustered nats-server. */
  replicas: number;
  /** max_age in milliseconds (0: unlimited, as nats-server reads it). */
  maxAgeMs: number;
  /** max_bytes (-1: unlimited). */
  maxBytes: number;
}

/** The configuration's defaults (config.ts): one replica, 7 days, no size limit. */
/** Default retention of the JetStream stream (NATS_STREAM_MAX_AGE): 7 days. */
export const DEFAULT_STREAM_MAX_AGE_MS = 7 * 86_400_000;
export const DEFAULT_STREAM_LIMITS: StreamLimits = { replicas: 1, maxAgeMs: DEFAULT_STREAM_MAX_AGE_MS, maxBytes: -1 };

/** The stream of subject prefix `prefix`: its name and the configuration it is created (or brought) to. */
export function streamConfigFor(prefix: string, limits: StreamLimits): Partial<StreamConfig> & { name: string } {
  return {
    name: prefix.toUpperCase().replace(/-/g, '_'),
    subjects: [`${prefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    num_replicas: limits.replicas,
    max_age: nanos(limits.maxAgeMs),
    max_bytes: limits.maxBytes,
  };
}

/** A stream limit for the log line: durations in the largest whole unit, -1/0 as unlimited. */
function describeLimit(field: 'num_replicas' | 'max_age' | 'max_bytes', v: number | undefined): string {
  if (field === 'num_replicas') return String(v || 1);
  if (!v || v < 0) return 'unlimited';
  if (field === 'max_bytes') return String(v);
  return formatDuration(v / 1e6);
}

/** Whether `err` is the server refusing this connection's user a subject (no permission); a request's refusal comes as a RequestError with it as the cause. */
function isPermissionError(err: unknown): boolean {
  return err instanceof errors.PermissionViolationError || (err instanceof errors.RequestError && err.cause instanceof errors.PermissionViolationError);
}

/**
 * Ensures the stream exists with our configuration; safe when replicas race. `managed`
 * (the process's NATS_STREAM_* settings): replicas and limits of an existing stream are
 * brought to them in place, with one log line naming each change; without it (tools,
 * tests) an existing stream's replicas and limits are left as they are. Returns the
 * stream's configuration as it is afterwards.
 */
export async function ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }, managed: boolean, log: Logger): Promise<StreamConfig> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let info;
    try {
      info = await jsm.streams.info(cfg.name);
    } catch (err) {
      if (apiErrorCode(err) !== JetStreamApiCodes.StreamNotFound) throw err;
      try {
        const created = await jsm.streams.add(cfg);
        log.info(
          {
            event: logEvent('bus.stream.created'),
            stream: cfg.name,
            subjects: cfg.subjects,
            num_replicas: created.config.num_replicas,
            max_age: describeLimit('max_age', created.config.max_age),
            max_bytes: describeLimit('max_bytes', created.config.max_bytes),
          },
          'bus: stream created',
        );
        return created.config;
      } catch (addErr) {
        // Another replica created it between our info and add: look again.
        if (apiErrorCode(addErr) === JS_STREAM_NAME_IN_USE) continue;
        if (isReplicasRefusal(addErr)) throw replicasRefused(cfg, addErr);
        throw addErr;
      }
    }
    const have = info.config;
    if (have.storage !== cfg.storage) {
      log.warn({ stream: cfg.name, storage: have.storage }, 'bus: stream storage differs from the configured one and cannot be changed in place');
    }
    const changes: string[] = [];
    if (JSON.stringify([...(have.subjects ?? [])].sort()) !== JSON.stringify([...(cfg.subjects ?? [])].sort())) {
      changes.push(`subjects ${(have.subjects ?? []).join(',')}→${(cfg.subjects ?? []).join(',')}`);
    }
    if (have.duplicate_window !== cfg.duplicate_window) changes.push(`duplicate_window ${have.duplicate_window}→${cfg.duplicate_window}`);
    // An older release's stream: one replica, no limits (0 / -1).
    const limitFields = managed ? (['num_replicas', 'max_age', 'max_bytes'] as const) : [];
    for (const field of limitFields) {
      const before = describeLimit(field, have[field]);
      const after = describeLimit(field, cfg[field]);
      if (before !== after) changes.push(`${field} ${before}→${after}`);
    }
    if (changes.length === 0) return have;
    const next: StreamConfig = { ...have, subjects: cfg.subjects ?? have.subjects, duplicate_window: cfg.duplicate_window ?? have.duplicate_window };
    for (const field of limitFields) next[field] = cfg[field] ?? have[field];
    try {
      const updated = await jsm.streams.update(cfg.name, next);
      log.info({ event: logEvent('bus.stream.updated'), stream: cfg.name, changes }, `bus: stream configuration updated (${changes.join('; ')})`);
      return updated.config;
    } catch (err) {
      if (isReplicasRefusal(err)) throw replicasRefused(cfg, err);
      // A role the server does not let change the stream (the chart's example
      // authorization: only calendar may) works on the stream as it is; the role that
      // may, brings it to the configuration when it starts.
      if (!isPermissionError(err)) throw err;
      log.warn(
        { event: logEvent('bus.stream.update_denied'), stream: cfg.name, changes, err: String(err) },
        'bus: stream differs from the configuration but this NATS user may not update it; using it as it is',
      );
      return have;
    }
  }
  throw new Error(`bus: could not create or read stream ${cfg.name}`);
}

function isReplicasRefusal(err: unknown): boolean {
  return apiErrorCode(err) === JS_REPLICAS_NOT_SUPPORTED || /replicas > 1 not supported/i.test(String(err));
}

/** The server's refusal of replicas > 1 (not clustered), as one line naming the setting. */
function replicasRefused(cfg: Partial<StreamConfig>, err: unknown): Error {
  return new Error(`NATS_STREAM_REPLICAS=${cfg.num_replicas} needs a clustered JetStream (${String((err as Error).message ?? err)})`, { cause: err });
}
