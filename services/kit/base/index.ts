/**
 * The kit's ground floor, which imports nothing else of the kit: the logger, the limits,
 * the log event names, identifiers and encodings (uuid, base32), what may be stored (storable-values),
 * private files and keys under DATA_DIR, the request id carried through a call, group
 * commit, durations, the clock and the configuration error.
 *
 * This file is the module's whole public surface: code outside services/kit/base/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { isAbsoluteUri } from './absolute-uri';
export { base32 } from './base32';
export { type Clock, type ClockTimer, sleepOn, systemClock } from './clock';
export { ConfigError, exitOnConfigError } from './config-error';
export { DURATION_UNITS, formatDuration } from './durations';
export { dottedKind, EnumNames, environments, type DottedEnumName, type EnumName } from './enum-names';
export { GroupCommit } from './group-commit';
export { EVENT_FEED_RETENTION_DAYS, MAX_NIGHTS, MAX_NIGHTS_READ, MAX_TOKEN_TTL_SECONDS, PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX, RATE_WINDOW_SECONDS } from './limits';
export { localKeyPath, type ResolvedSecretKey, resolveSecretKey } from './local-keys';
export { LOG_EVENTS, logEvent, type LogEvent } from './log-events';
export { LogSampler } from './log-sampler';
export { createLogger, type Logger, redactSecrets } from './logger';
export { ensureOperatorTokenFile, operatorTokenPath, readOperatorTokenFile } from './operator-token';
export { makePrivateDir, PRIVATE_DIR_MODE, securePrivateDataDir, tightenTree } from './private-dir';
export { currentRequestId, REQUEST_ID_HEADER, requestIdFrom, withRequestId } from './request-id';
export { REQUEST_LOG_LIMITS } from './request-log-limits';
export { type ServiceName } from './service-name';
export { isStorableInstantMs, isUnstorableText, MAX_INSTANT_MS, MAX_TIMESTAMP_SECONDS, MIN_INSTANT_MS, MIN_TIMESTAMP_SECONDS, storableText } from './storable-values';
export { canonicalUuid, isCanonicalUuid, isUuid, UUID_PATTERN } from './uuid';
