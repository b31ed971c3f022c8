/**
 * Helpers of the catalog integration tests: Connect clients (gRPC over h2c) to a
 * running system, workspaces, a complete property factory, waiting for the photo
 * pipeline, error details.
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  MissingReason,
  PhotoRejectionReason,
  PropertySchema,
  PropertyStatus,
  type GetPropertyResponse,
  type Property,
  type UpsertPropertyResponse,
} from '../../../gen/psync/catalog/v1/catalog_pb';
import { createWorkspace, internalClients, type CatalogClient, type IdentityClient, type InternalClients } from '../../support/internal-clients';

/**
 * Environment of the systems the catalog tests start: photo hosts on loopback are
 * allowed, and a small connection pool (four services x 3) so that parallel test
 * files stay far below a shared PostgreSQL's max_connections.
 */
export const CATALOG_TEST_ENV = { EGRESS_ALLOW_CIDRS: '127.0.0.0/8', DATABASE_POOL_SIZE: '3' } as const;

export type { CatalogClient, IdentityClient };
export type Clients = InternalClients;

/** Clients of the internal services at a system's internal URL. */
export const clientsFor = (baseUrl: string): Clients => internalClients(baseUrl);

/** A new workspace's id. */
export function newWorkspace(identity: IdentityClient, env: 'sandbox' | 'production' = 'sandbox'): Promise<string> {
  return createWorkspace(identity, env, 'catalog test');
}

/** A complete property (price, amenities, the given photos), listed. */
export function completeProperty(photoUrls: string[], overrides: Partial<MessageInitShape<typeof PropertySchema>> = {}): Property {
  return create(PropertySchema, {
    name: 'Harbour loft',
    description: 'Two rooms over the old harbour.',
    propertyType: 'apartment',
    address: { line1: '1 Quai des Arts', city: 'Marseille', postalCode: '13002', country: 'FR', latitude: 43.2965, longitude: 5.3698 },
    occupancy: { maxGuests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
    baseRate: { value: '120.00', currency: 'EUR' },
    amenities: ['wifi', 'kitchen', 'heating'],
    photos: photoUrls.map((url, i) => ({ url, position: i })),
    checkInTime: '15:00',
    checkOutTime: '11:00',
    status: PropertyStatus.LISTED,
    ...overrides,
  } as MessageInitShape<typeof PropertySchema>);
}

/** Public spellings, for readable assertions. */
export const missingNames = (m: MissingReason[]): string[] =>
  m.map((r) => ({ 1: 'price', 2: 'amenities', 3: 'cover_photo', 4: 'photos', 5: 'photos_processing', 6: 'unlisted' })[r as 1] ?? `?${r}`);

export const rejectionName = (r: PhotoRejectionReason): string => ({ 1: 'unreachable', 2: 'forbidden_url', 3: 'not_an_image', 4: 'too_large', 5: 'too_small' })[r as 1] ?? `?${r}`;

export const rejections = (res: UpsertPropertyResponse | GetPropertyResponse): { url: string; reason: string }[] =>
  res.photosRejected.map((r) => ({ url: r.url, reason: rejectionName(r.reason) }));

/** Polls GetProperty until photo processing has ended (nothing pending); returns the last answer. */
export async function waitForPhotos(catalog: CatalogClient, workspaceId: string, providerId: string, timeoutMs = 45000): Promise<GetPropertyResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await catalog.getProperty({ workspaceId, providerId });
    if (!missingNames(res.missing).includes('photos_processing')) return res;
    if (Date.now() > deadline) throw new Error(`photos of ${providerId} still processing after ${timeoutMs} ms: ${JSON.stringify(missingNames(res.missing))}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export { connectErrorOf, reasonOf, violationsOf } from '../../support/connect-errors';

let counter = 0;
/** A fresh provider id. */
export const pid = (label = 'p'): string => `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
