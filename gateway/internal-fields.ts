/**
 * A validation failure found behind the gateway names fields of the internal request
 * (`property.photos[0].url`, `target`); a partner sees only the contract's names
 * (`photos[0].url`, docs/contract-gaps.md "`errors[].code` values"). Each contract route
 * declares which fields of its internal request stand for which public ones
 * (contract-route.ts `internalFields`). A violation of any other field (the workspace
 * id the gateway filled in, say) means the gateway let through what a service refuses:
 * a fault of ours, answered as `internal_error` with the internal field names in the log
 * only, never as a 400 naming an internal field.
 */
import { ConnectError } from '@connectrpc/connect';
import { problemFromConnectError } from './connect-errors';
import { ProblemError } from './problems';

/** Internal top-level field name → the public path it stands for (`''`: the body itself). */
export type InternalFields = Readonly<Record<string, string>>;

/** Internal fields named as their public counterparts (`check_in` is `check_in`). */
export function sameNames(...names: string[]): Record<string, string> {
  return Object.fromEntries(names.map((n) => [n, n]));
}

/** The public path of an internal violation's field, or undefined when it stands for none. */
export function publicField(field: string, fields: InternalFields): string | undefined {
  const m = /^([a-z][a-z0-9_]*)(.*)$/.exec(field);
  if (!m || !Object.hasOwn(fields, m[1]!)) return undefined;
  const target = fields[m[1]!]!;
  const rest = m[2]!;
  if (target !== '') return target + rest;
  // The body itself: `property` is the body, `property.name` is `name`, `property[0]` stands for nothing.
  if (rest === '') return 'body';
  return rest.startsWith('.') ? rest.slice(1) : undefined;
}

/**
 * What to throw for a failure of a route's internal call: an internal validation
 * failure as `validation_failed` in the contract's field names, or as an internal error
 * when a field stands for none; anything else unchanged (error-mapper.ts maps it).
 */
export function inContractNames(err: unknown, fields: InternalFields): unknown {
  if (!(err instanceof ConnectError)) return err;
  const problem = problemFromConnectError(err);
  if (problem?.code !== 'validation_failed') return err;
  const internal = problem.errors ?? [];
  const mapped = internal.map((v) => ({ field: publicField(v.field, fields), code: v.code }));
  const unmapped = internal.filter((_, i) => mapped[i]!.field === undefined).map((v) => v.field);
  if (internal.length === 0 || unmapped.length > 0) {
    return new Error(`an internal service refused a request the gateway accepted (internal fields: ${unmapped.join(', ') || 'none named'})`, { cause: err });
  }
  return new ProblemError('validation_failed', { errors: mapped.map((v) => ({ field: v.field!, code: v.code })), cause: err });
}
