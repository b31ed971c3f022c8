/** What the route modules need. */
import type { ContractDeps } from '../contract-route';
import type { Upstreams } from '../upstream';
import type { TokenFailureThrottle } from '../token-failures';

export interface RouteDeps {
  upstreams: Upstreams;
  /** Shared by every token-authenticated route (Authorize). */
  contract: ContractDeps;
  /** TOKEN_RATE_LIMIT_PER_HOUR: the token endpoint's ceiling. */
  tokenQuota: number;
  /** Failed token exchanges per client address and per presented key id. */
  tokenFailures: TokenFailureThrottle;
}
