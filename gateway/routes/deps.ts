/** What the route modules need. */
import type { ContractDeps } from '../contract-route';
import type { Upstreams } from '../upstream';

export interface RouteDeps {
  upstreams: Upstreams;
  /** Shared by every token-authenticated route (Authorize). */
  contract: ContractDeps;
  /** TOKEN_RATE_LIMIT_PER_HOUR: the token endpoint's ceiling. */
  tokenQuota: number;
}
