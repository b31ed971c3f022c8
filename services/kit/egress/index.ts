/**
 * Outbound HTTP to partners' addresses, vetted at connection time (webhook deliveries,
 * photo fetches).
 *
 * This file is the module's whole public surface: code outside services/kit/egress/ imports
 * from here, never from a file inside (eslint.config.mjs, docs/architecture.md "Modules").
 */
export { checkUrl, checkUrlAndResolve, EgressError, EgressPool, guardedRequest, PHOTO_URL_RULES, type Resolver, type UrlRules, WEBHOOK_URL_RULES } from './egress';
