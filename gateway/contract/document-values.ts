/**
 * The values of the OpenAPI document that the code owns, named once: the
 * configuration's defaults (services/kit/runtime/config.ts: the document never varies
 * with a deployment's configuration, it shows the defaults and says so), the body
 * limit, the token lifetime, and the identifiers its examples use. The declarations of
 * this folder write them into their prose with template literals, so a change here
 * changes the document. Limits of services/kit/base and the gateway's own constants
 * are imported where they are used, not renamed here.
 */
import { settings } from '../../services/kit/runtime';
import { RATE_WINDOW_SECONDS } from '../../services/kit/base';
import { BODY_LIMIT_BYTES } from '../body';
import { COMPLETED_AT_MAX_AHEAD_MS } from './deletion-requests';

/** The path prefix of this contract version. */
export const API_VERSION = 'v1';
/** The date of the specification this document describes (spec "Versioning"). */
export const SPEC_DATE = '2026-08-26';

export const DOCS_URL = settings.docsUrl.default;
export const CONTRACT_QUOTA = settings.rateLimitPerHour.default;
/** `RateLimit-Remaining` after a fresh key's first call. */
export const CONTRACT_QUOTA_LESS_ONE = CONTRACT_QUOTA - 1;
export const TOKEN_QUOTA = settings.tokenRateLimitPerHour.default;
export const TOKEN_TTL_SECONDS = settings.tokenTtlSeconds.default;
export const TOKEN_TTL_MINUTES = TOKEN_TTL_SECONDS / 60;
/** A `RateLimit-Reset` halfway through the window. */
export const RATE_WINDOW_HALF = RATE_WINDOW_SECONDS / 2;
export const BODY_LIMIT_KIB = BODY_LIMIT_BYTES / 1024;
export const COMPLETED_AT_SKEW_MINUTES = COMPLETED_AT_MAX_AHEAD_MS / 60_000;

/** The placeholders the examples use for the partner's identifiers (openapi-examples.test.ts replaces them). */
export const EXAMPLE_IDS = {
  providerId: 'villa-42',
  externalUid: 'resv-100234',
  eventId: '0b7c6f7e-5d1a-4f2b-8e3c-9a1b2c3d4e5f',
  listingId: 'lst_7k2mq4xw6c3rbt5nhd6pvf3j',
  unknownListingId: 'lst_zzzzzzzzzzzzzzzzzzzzzzzz',
  workspaceId: '8a5e2c61-1f3b-4d7e-9c0a-6b2d4e8f1a37',
  webhookUrl: 'https://hooks.partner.example/psync',
  /** A test delivery's `event_id` (the delivery log's examples). */
  deliveryEventId: '6c3e9b2a-4f1d-4a8e-b7c5-1d2e3f4a5b6c',
} as const;

/** A fixed example request id: every problem example's `instance` is `urn:psync:request:<this>`. */
export const EXAMPLE_REQUEST_ID = '3f1c5f0e-8d2b-4c53-9a61-2b1f2e7c9d40';
