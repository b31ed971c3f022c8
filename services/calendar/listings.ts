/**
 * What the calendar asks the catalog about listings (it never reads catalog tables).
 *
 * - `assertOwned(workspace, listing)`: PUT /blocks needs "a listing of the caller's
 *   workspace", else 404 property_not_found, indistinguishable for unknown and foreign
 *   listings (CatalogService.GetListing answers both as NOT_FOUND).
 * - `resolve(listing)`: holds, bookings and availability address any listing and need
 *   its workspace, environment, provider_id and check-in/out times
 *   (CatalogService.ResolveListing).
 *
 * A listing's workspace and environment never change, so positive answers to those
 * two questions are cached in the process (bounded). Booking confirmation asks with
 * `fresh: true`, because check-in/out times and provider_id go into
 * `booking.confirmed` and may have changed. Negative answers are never cached: a
 * listing may be created a moment later.
 */
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import { CatalogService, type Listing } from '../../gen/psync/catalog/v1/catalog_pb';
import type { Environment } from '../../gen/psync/common/v1/environment_pb';
import { environments } from '../kit/base';
import { ErrorReason } from '../../gen/psync/common/v1/errors_pb';
import { notFound } from '../kit/rpc';

/** What the calendar needs to know about a listing. */
export interface ListingInfo {
  listingId: string;
  workspaceId: string;
  environment: 'sandbox' | 'production';
  providerId?: string;
  checkInTime: string;
  checkOutTime: string;
}

const CACHE_LIMIT = 100_000;

function environmentName(e: Environment): 'sandbox' | 'production' {
  const name = environments.nameOf(e);
  if (!name) throw new ConnectError('catalog returned a listing without an environment', Code.Internal);
  return name;
}

function toInfo(l: Listing): ListingInfo {
  return {
    listingId: l.listingId,
    workspaceId: l.workspaceId,
    environment: environmentName(l.environment),
    providerId: l.providerId,
    checkInTime: l.checkInTime,
    checkOutTime: l.checkOutTime,
  };
}

/** A bounded map: cleared when full (cheap, and the entries are re-learnt on demand). */
class BoundedCache<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly limit: number) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    if (this.map.size >= this.limit) this.map.clear();
    this.map.set(key, value);
  }
}

export class ListingDirectory {
  private readonly owned = new BoundedCache<true>(CACHE_LIMIT);
  private readonly resolved = new BoundedCache<ListingInfo>(CACHE_LIMIT);

  /** `catalog()` returns the catalog client (resolved lazily: URLs are known after bind). */
  constructor(private readonly catalog: () => Client<typeof CatalogService>) {}

  /** Throws NOT_FOUND (PROPERTY_NOT_FOUND) unless `listingId` belongs to `workspaceId`. */
  async assertOwned(workspaceId: string, listingId: string): Promise<void> {
    const key = `${workspaceId}\u0000${listingId}`;
    if (this.owned.get(key)) return;
    let listing: Listing | undefined;
    try {
      listing = (await this.catalog().getListing({ workspaceId, listingId })).listing;
    } catch (err) {
      // Anything but NOT_FOUND travels as the catalog (or its transport) said it: an
      // unreachable catalog is UNAVAILABLE already, an INVALID_ARGUMENT never becomes one.
      if (ConnectError.from(err).code !== Code.NotFound) throw err;
    }
    // Unknown and another workspace's listing: one answer (spec "Errors").
    if (!listing || listing.workspaceId.toLowerCase() !== workspaceId.toLowerCase()) {
      throw notFound(ErrorReason.PROPERTY_NOT_FOUND, 'no such listing in this workspace');
    }
    this.owned.set(key, true);
  }

  /**
   * The listing with its workspace and environment; NOT_FOUND (LISTING_NOT_FOUND) if
   * unknown. `fresh` bypasses the cache (times and provider_id may change).
   */
  async resolve(listingId: string, opts: { fresh?: boolean } = {}): Promise<ListingInfo> {
    if (!opts.fresh) {
      const hit = this.resolved.get(listingId);
      if (hit) return hit;
    }
    let listing: Listing | undefined;
    try {
      listing = (await this.catalog().resolveListing({ listingId })).listing;
    } catch (err) {
      if (ConnectError.from(err).code === Code.NotFound) throw notFound(ErrorReason.LISTING_NOT_FOUND, 'no such listing');
      throw err;
    }
    if (!listing) throw notFound(ErrorReason.LISTING_NOT_FOUND, 'no such listing');
    const info = toInfo(listing);
    this.resolved.set(listingId, info);
    this.owned.set(`${info.workspaceId}\u0000${listingId}`, true);
    return info;
  }
}
