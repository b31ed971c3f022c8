/**
 * The event bus (NATS JetStream, or the in-process bus of the embedded default), its
 * consumers and their dedupe marks, the stream, and the transactional outbox that feeds it.
 *
 * This file is the module's whole public surface: code outside services/kit/events/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { type BusEvent, type EventBus, type ReceivedEvent, type Subscription } from './bus';
export { takeDrainedMarker, writeDrainedMarker } from './bus-continuity';
export { createMemoryBus, subjectMatches } from './bus-memory';
export { connectNatsBus, inboxPrefixOf } from './bus-nats';
export { checkCredsFile, NatsCredentialsError, natsServers } from './nats-credentials';
export { DEFAULT_STREAM_LIMITS, DEFAULT_STREAM_MAX_AGE_MS, streamConfigFor, type StreamLimits } from './nats-stream';
export { OutboxHousekeeping } from './outbox-housekeeping';
export { type OutboxEncoder, type OutboxMessage, OutboxRelay, type OutboxRow } from './outbox-relay';
export { appendToOutbox, type OutboxEvent } from './outbox-writer';
export { markProcessed } from './processed-events';
