/**
 * CatalogService RPC implementations: call the domain modules, shape the response
 * (requests arrive checked against catalog.proto's rules: services/kit/rpc/validation.ts). Thin on purpose; the rules live in property-upsert.ts, publication.ts,
 * publishability.ts, photo-pipeline.ts, public-listings.ts and
 * marketplace-listings.ts.
 */
import { Code, ConnectError, type ServiceImpl } from '@connectrpc/connect';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { UpsertResult } from '../../gen/psync/common/v1/upsert_result_pb';
import type { Sql } from '../kit/db';
import type { Logger } from '../kit/base';
import { AMENITIES } from './amenities';
import { canonicalUuid } from '../kit/base';
import { listingNotFound, propertyNotFound } from './errors';
import { listingMessage, readListing } from './listing-records';
import { DEFAULT_MARKETPLACE_LISTING, createMarketplaceListing } from './marketplace-listings';
import { propertyRecord, toMissingReason, toPropertyStatus, toRejectionReason } from './messages';
import { findProperty, propertyPage, readPhotos, readPhotosOf, rejectedPhotos } from './property-records';
import { PAGE_SIZE_DEFAULT } from '../kit/base';
import { upsertProperty } from './property-upsert';
import { getPublicListing, getPublicPhoto, searchPublicListings } from './public-listings';
import { propertyInput } from './property-input';
import type { WorkspaceDirectory } from './workspaces';

export interface CatalogDeps {
  sql: Sql;
  log: Logger;
  workspaces: WorkspaceDirectory;
  /** After a commit that wrote events. */
  nudgeOutbox: () => void;
  /** After a commit that queued photos. */
  nudgePhotos: () => void;
}

export function catalogService(deps: CatalogDeps): ServiceImpl<typeof CatalogService> {
  const { sql, workspaces } = deps;

  const impl: ServiceImpl<typeof CatalogService> = {
    async upsertProperty(req) {
      const { workspaceId, providerId, property } = propertyInput(req);
      const environment = await workspaces.environment(workspaceId);
      const out = await upsertProperty(sql, { workspaceId, providerId, environment, property });
      if (out.events > 0) deps.nudgeOutbox();
      if (out.queuedPhotos > 0) deps.nudgePhotos();
      const p = out.property;
      return {
        providerId,
        result: out.created ? UpsertResult.CREATED : UpsertResult.UPDATED,
        listingId: p.listing_id ?? undefined,
        status: toPropertyStatus(p.status),
        publishable: p.publishable,
        missing: p.missing.map(toMissingReason),
        unknownAmenities: p.unknown_amenities,
        photosRejected: rejectedPhotos(out.photos).map((r) => ({ url: r.url, reason: toRejectionReason(r.reason) })),
      };
    },

    async getProperty(req) {
      const p = await findProperty(sql, canonicalUuid(req.workspaceId), req.providerId);
      if (!p) throw propertyNotFound();
      const photos = await readPhotos(sql, p.id);
      return {
        ...propertyRecord(p, photos),
        photosRejected: rejectedPhotos(photos).map((r) => ({ url: r.url, reason: toRejectionReason(r.reason) })),
      };
    },

    async listProperties(req) {
      const page = req.page === 0 ? 1 : req.page;
      const pageSize = req.pageSize === 0 ? PAGE_SIZE_DEFAULT : req.pageSize;
      const rows = await propertyPage(sql, canonicalUuid(req.workspaceId), pageSize + 1, (page - 1) * pageSize);
      const shown = rows.slice(0, pageSize);
      const photos = await readPhotosOf(
        sql,
        shown.map((p) => p.id),
      );
      return { items: shown.map((p) => propertyRecord(p, photos.get(p.id) ?? [])), hasMore: rows.length > pageSize };
    },

    async createListing(req) {
      const workspaceId = canonicalUuid(req.workspaceId);
      const environment = await workspaces.environment(workspaceId);
      const listing = await createMarketplaceListing(sql, {
        workspaceId,
        environment,
        name: req.name ?? DEFAULT_MARKETPLACE_LISTING.name,
        checkInTime: req.checkInTime ?? DEFAULT_MARKETPLACE_LISTING.checkInTime,
        checkOutTime: req.checkOutTime ?? DEFAULT_MARKETPLACE_LISTING.checkOutTime,
      });
      deps.nudgeOutbox();
      return { listing: listingMessage(listing) };
    },

    async getListing(req) {
      const listing = req.listingId ? await readListing(sql, req.listingId) : undefined;
      // Unknown, and another workspace's, answer the same (spec "Errors": indistinguishable).
      if (!listing || listing.workspace_id !== canonicalUuid(req.workspaceId)) throw propertyNotFound();
      return { listing: listingMessage(listing) };
    },

    async resolveListing(req) {
      const listing = req.listingId ? await readListing(sql, req.listingId) : undefined;
      if (!listing) throw listingNotFound();
      return { listing: listingMessage(listing) };
    },

    async listAmenities() {
      return { amenities: AMENITIES.map((a) => ({ slug: a.slug, name: a.name, category: a.category })) };
    },

    async searchPublicListings(req) {
      return searchPublicListings(sql, req);
    },

    async getPublicListing(req) {
      const listing = req.listingId ? await getPublicListing(sql, req.listingId) : undefined;
      if (!listing) throw listingNotFound();
      return { listing };
    },

    async getPublicPhoto(req) {
      const photo = await getPublicPhoto(sql, req.photoId);
      if (!photo) throw new ConnectError('photo not found', Code.NotFound);
      return { contentType: photo.content_type, width: photo.width, height: photo.height, data: photo.bytes };
    },
  };

  // Failures nobody mapped on purpose are mapped by the kit's error interceptor (kit/errors.ts).
  return impl;
}
