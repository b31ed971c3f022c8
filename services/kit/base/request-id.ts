/**
 * The id of the public request being served, carried through every internal call it
 * makes, so a service's log line names the request a partner sees as the problem
 * `instance` (`urn:psync:request:<id>`, gateway/error-mapper.ts).
 *
 * The gateway runs each request inside `withRequestId`; the kit's client interceptor
 * (internal-client.ts) sends it as `x-request-id`; the kit's error interceptor
 * (errors.ts) reads it back on the serving side and runs the handler inside it, so a
 * service calling another passes it on too.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The header an internal call carries the public request id in. */
export const REQUEST_ID_HEADER = 'x-request-id';

/** What a request id may look like on the wire (a UUID from the gateway; a caller's own id up to 64 characters). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

const store = new AsyncLocalStorage<string>();

/** Runs `fn` with `id` as the current request id. */
export function withRequestId<T>(id: string, fn: () => T): T {
  return store.run(id, fn);
}

/** The request id of the current call chain, if any. */
export function currentRequestId(): string | undefined {
  return store.getStore();
}

/** The request id a caller sent, when it has an acceptable shape (never logged unchecked). */
export function requestIdFrom(header: string | null | undefined): string | undefined {
  return header && REQUEST_ID.test(header) ? header : undefined;
}
