/**
 * Sandbox partners for the gateway benchmarks: a workspace with marketplace listings,
 * an API key and an access token exchanged at the gateway (`POST /v1/token`), made
 * through the system's internal API as the operator would; and the JSON bodies a
 * partner sends.
 */
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { CatalogService } from '../../gen/psync/catalog/v1/catalog_pb';
import { Environment } from '../../gen/psync/common/v1/environment_pb';
import { IdentityService } from '../../gen/psync/identity/v1/identity_pb';
import { credentialInterceptor } from '../../test/support/credentials';

export interface Partner {
  workspaceId: string;
  /** A fresh access token (valid TOKEN_TTL_SECONDS, at most an hour). */
  token: string;
  listings: string[];
}

export interface Operator {
  identity: Client<typeof IdentityService>;
  catalog: Client<typeof CatalogService>;
  close(): void;
}

/** Internal API clients of the system whose internal server is `internalUrl`. */
export function operatorClients(internalUrl: string): Operator {
  const sessions = new Http2SessionManager(internalUrl);
  const transport = createGrpcTransport({ baseUrl: internalUrl, sessionManager: sessions, defaultTimeoutMs: 60_000, interceptors: [credentialInterceptor()] });
  return { identity: createClient(IdentityService, transport), catalog: createClient(CatalogService, transport), close: () => sessions.abort() };
}

/** An access token for a new key of `workspaceId`, from the gateway at `gatewayUrl`. */
export async function accessToken(op: Operator, gatewayUrl: string, workspaceId: string): Promise<string> {
  const key = await op.identity.issueKey({ workspaceId });
  const res = await fetch(`${gatewayUrl}/v1/token`, { method: 'POST', headers: { authorization: `Bearer ${key.apiKey}` } });
  if (res.status !== 200) throw new Error(`POST /v1/token answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** A sandbox workspace with `listings` marketplace listings and an access token. */
export async function createPartner(op: Operator, gatewayUrl: string, name: string, listings: number): Promise<Partner> {
  const workspaceId = (await op.identity.createWorkspace({ name, environment: Environment.SANDBOX })).workspace!.workspaceId;
  const ids: string[] = [];
  for (let i = 0; i < listings; i++) ids.push((await op.catalog.createListing({ workspaceId })).listing!.listingId);
  return { workspaceId, token: await accessToken(op, gatewayUrl, workspaceId), listings: ids };
}

/** `YYYY-MM-DD`, `n` days after 2031-01-01. */
export const benchDay = (n: number): string => new Date(Date.UTC(2031, 0, 1) + n * 86_400_000).toISOString().slice(0, 10);

/** The body of `PUT /v1/properties/{provider_id}`: a complete property (photos as given). */
export function propertyBody(name: string, photos: string[] = []): Record<string, unknown> {
  return {
    name,
    description: 'Two rooms over the old harbour.',
    property_type: 'apartment',
    address: { line1: '1 Quai des Arts', city: 'Marseille', postal_code: '13002', country: 'FR', latitude: 43.2965, longitude: 5.3698 },
    occupancy: { max_guests: 4, bedrooms: 2, beds: 2, bathrooms: 1 },
    base_rate: { value: '120.00', currency: 'EUR' },
    amenities: ['wifi', 'kitchen', 'heating'],
    photos: photos.map((url, position) => ({ url, position })),
    check_in_time: '15:00',
    check_out_time: '11:00',
    status: 'listed',
  };
}
