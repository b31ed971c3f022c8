/**
 * @partner-sync/partner-sdk: a typed client of the Partner Synchronisation API v1
 * (token exchange and refresh, typed problem errors, rate limits honoured) and a
 * verifier of its signed webhook deliveries. See README.md.
 */
export { PartnerClient, type PartnerClientOptions } from './client';
export {
  EventsPrunedError,
  isProblem,
  PartnerApiError,
  PROBLEM_CODES,
  ProblemError,
  type ProblemCode,
  type ResponseMeta,
  TokenExchangeError,
  UnexpectedResponseError,
} from './errors';
export type { RateLimitInfo } from './rate-limit';
export type { TokenInfo } from './token-source';
export { type Clock, DEFAULT_RETRY_POLICY, type RetryPolicy } from './transport';
export * from './types';
export {
  DEFAULT_TOLERANCE_SECONDS,
  PREVIOUS_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signWebhook,
  SUBSCRIBABLE_EVENT_TYPES,
  TIMESTAMP_HEADER,
  verifyWebhook,
  type VerifyOptions,
  WEBHOOK_EVENT_TYPES,
  type WebhookHeaders,
  WebhookVerificationError,
  type WebhookVerificationCode,
} from './webhook';
