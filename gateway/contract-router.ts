/**
 * Matching requests to the contract's routes, with the public answers for requests
 * outside the contract's shape (docs/contract-gaps.md "requests outside the
 * contract's shape"):
 *
 * - a path no route has: `404 not_found`;
 * - a known path with another method: `405 method_not_allowed` with `Allow`;
 * - an empty path parameter (`PUT /v1/properties/`) matches its route, whose
 *   validation then answers `400` naming the parameter.
 *
 * Both 404 and 405 carry the rate-limit headers of the presented token's key (looked
 * at, not counted). A small matcher of its own rather than @koa/router: it must match
 * empty parameter segments, must not decode them (validation reports undecodable
 * ones), and must tell "no such path" from "no such method" for the problem
 * documents above.
 */
import type { Middleware, Next } from 'koa';
import { ProblemError } from './problems';
import type { GatewayContext, GatewayState } from './request-context';

export type HttpMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** A route: a method, a path template (`:name` segments) and what answers it. */
export interface Route {
  method: HttpMethod;
  path: string;
  /** `rawParams` are the path segments as sent (percent-encoded, possibly empty). */
  handle(ctx: GatewayContext, rawParams: Record<string, string>): Promise<void>;
}

type Segment = { literal: string } | { param: string };

/**
 * Compiles `/v1/blocks/:external_uid` into a matcher of raw paths, already split at `/`
 * (the router splits each request's path once for all its routes).
 */
function segmentsMatcher(template: string): (parts: string[]) => Record<string, string> | undefined {
  const segments: Segment[] = template
    .split('/')
    .slice(1)
    .map((s) => (s.startsWith(':') ? { param: s.slice(1) } : { literal: s }));
  return (parts) => {
    if (parts[0] !== '' || parts.length !== segments.length + 1) return undefined;
    const params: Record<string, string> = {};
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!;
      const part = parts[i + 1]!;
      if ('literal' in seg) {
        if (seg.literal !== part) return undefined;
      } else {
        params[seg.param] = part;
      }
    }
    return params;
  };
}

export interface RouterOptions {
  /** Looks at the presented token's rate-limit state for a 404/405 (never throws). */
  peek(ctx: GatewayContext): Promise<void>;
}

/** The contract's router: the last middleware, answering every request that reaches it. */
export function contractRouter(routes: Route[], opts: RouterOptions): Middleware<GatewayState> {
  const compiled = routes.map((r) => ({ route: r, match: segmentsMatcher(r.path), label: `${r.method} ${r.path}` }));
  return async function contractRouterMiddleware(ctx: GatewayContext, _next: Next) {
    const method = ctx.method === 'HEAD' ? 'GET' : ctx.method;
    const parts = ctx.path.split('/');
    // Every route the path matches (for 405's Allow), and the one of this method.
    const candidates: Route[] = [];
    for (const c of compiled) {
      const params = c.match(parts);
      if (!params) continue;
      if (c.route.method === method) {
        ctx.state.route = c.label;
        ctx.state.routePath = c.route.path;
        await c.route.handle(ctx, params);
        return;
      }
      candidates.push(c.route);
    }
    await opts.peek(ctx);
    if (candidates.length === 0) throw new ProblemError('not_found');
    const allowed = [...new Set(candidates.map((r) => r.method))];
    if (allowed.includes('GET')) allowed.push('HEAD' as HttpMethod);
    ctx.state.route = `* ${candidates[0]!.path}`;
    ctx.state.routePath = candidates[0]!.path;
    throw new ProblemError('method_not_allowed', { headers: { Allow: allowed.join(', ') } });
  };
}
