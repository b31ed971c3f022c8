/**
 * The frame every token-authenticated contract endpoint runs in, in the order of
 * checks of spec "Errors" and docs/decisions.md:
 *
 *   authentication (401) → rate limit (429) → authorisation (403)
 *   → validation of path, query and body, all violations at once (400), including
 *     text that cannot be stored in any decoded string (storable-text.ts)
 *   → 501 not_enabled for a production workspace (a service's own 501, such as a block
 *     addressed by provider_id, comes back as UNIMPLEMENTED after its validation)
 *   → the internal call and the presenter; a validation failure behind the gateway
 *     is answered in the contract's field names (internal-fields.ts).
 *
 * So a 501 always means the request was valid, and nothing is looked up or written
 * for a production workspace (docs/contract-gaps.md "production workspaces").
 */
import type { Client } from '@connectrpc/connect';
import { Environment } from '../gen/psync/common/v1/environment_pb';
import type { IdentityService } from '../gen/psync/identity/v1/identity_pb';
import type { Logger } from '../services/kit/base';
import { authorizeContractRequest } from './auth';
import { inContractNames, type InternalFields } from './internal-fields';
import { readJsonBody, ReadJsonOptions } from './body';
import type { HttpMethod, Route } from './contract-router';
import { ProblemError, validationFailed, Violation } from './problems';
import type { GatewayContext, Principal } from './request-context';
import { unstorableTextViolations } from './storable-text';
import { MAX_VIOLATIONS, queryForSchema, Validator } from './validate';

/** What a validated request carries into the handler. */
export interface ContractInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
}

export interface ContractSpec<P, Q, B> {
  method: HttpMethod;
  path: string;
  params: Validator<P>;
  query: Validator<Q>;
  /** The JSON body, when the endpoint has one (never read otherwise). */
  body?: { schema: Validator<B>; empty: ReadJsonOptions['empty'] };
  /**
   * Rules across fields (e.g. a block's night count), run on every body that parsed as
   * a JSON object, beside the schema's violations; a rule checks only fields that have
   * none of their own in `found`.
   */
  rules?(body: Record<string, unknown>, found: readonly Violation[]): Violation[];
  /**
   * Rules across query parameters (e.g. a date range's order and length), beside the
   * schema's violations; a rule checks only parameters that have none of their own in `found`.
   */
  queryRules?(query: Record<string, unknown>, found: readonly Violation[]): Violation[];
  /**
   * Which fields of the internal request stand for which public ones: a validation
   * failure behind the gateway is answered in the contract's names, or as an internal
   * error for any other field (internal-fields.ts).
   */
  internalFields: InternalFields;
  /** Calls the internal service and writes the response. */
  call(ctx: GatewayContext, input: ContractInput<P, Q, B>, caller: Principal): Promise<void>;
}

export interface ContractDeps {
  identity: Client<typeof IdentityService>;
  contractQuota: number;
  log: Logger;
}

/** Path parameters: decoded, an empty one `required`, an undecodable one `invalid`. */
function decodeParams(raw: Record<string, string>): { values: Record<string, string>; violations: Violation[] } {
  const values: Record<string, string> = {};
  const violations: Violation[] = [];
  for (const [name, text] of Object.entries(raw)) {
    if (text === '') {
      violations.push({ field: name, code: 'required' });
      continue;
    }
    try {
      values[name] = decodeURIComponent(text);
    } catch {
      violations.push({ field: name, code: 'invalid' });
    }
  }
  return { values, violations };
}

/** A Route running `spec` inside the contract frame. */
export function contractRoute<P, Q, B = undefined>(spec: ContractSpec<P, Q, B>, deps: ContractDeps): Route {
  return {
    method: spec.method,
    path: spec.path,
    async handle(ctx, rawParams) {
      const caller = await authorizeContractRequest(ctx, deps);

      const decoded = decodeParams(rawParams);
      const refused = new Set(decoded.violations.map((v) => v.field));
      const violations: Violation[] = [
        ...decoded.violations,
        // A parameter already refused above is not reported a second time as missing.
        ...spec.params.violations(decoded.values).filter((v) => !(refused.has(v.field) && v.code === 'required')),
      ];
      const query = queryForSchema(ctx.query, spec.query.integerNames);
      const queryViolations = spec.query.violations(query);
      violations.push(...queryViolations);
      if (spec.queryRules) violations.push(...spec.queryRules(query, queryViolations));

      let body: unknown = undefined;
      if (spec.body) {
        const read = await readJsonBody(ctx, { empty: spec.body.empty });
        if (!read.ok) {
          violations.push(read.violation);
        } else {
          body = read.value;
          const bodyViolations = spec.body.schema.violations(body);
          violations.push(...bodyViolations);
          if (spec.rules && body !== null && typeof body === 'object' && !Array.isArray(body)) {
            violations.push(...spec.rules(body as Record<string, unknown>, bodyViolations));
          }
        }
      }
      // One rule for every decoded string, whatever its schema says: only text that can be stored.
      violations.push(
        ...unstorableTextViolations(decoded.values, 'parameters', violations),
        ...unstorableTextViolations(query, 'parameters', violations),
        ...(body === undefined ? [] : unstorableTextViolations(body, 'body', violations)),
      );
      // The request log keeps the route's own identifiers, only those that passed validation.
      const refusedParams = new Set(violations.map((v) => v.field));
      ctx.state.pathParams = Object.fromEntries(Object.entries(decoded.values).filter(([name]) => !refusedParams.has(name)));
      if (violations.length > 0) throw validationFailed(violations.slice(0, MAX_VIOLATIONS));

      const input: ContractInput<P, Q, B> = { params: decoded.values as P, query: query as Q, body: body as B };
      // Only a sandbox workspace reaches a service; production answers 501 after full validation.
      if (caller.environment !== Environment.SANDBOX) throw new ProblemError('not_enabled');
      try {
        await spec.call(ctx, input, caller);
      } catch (err) {
        throw inContractNames(err, spec.internalFields);
      }
    },
  };
}
